#pragma once
// The store's file primitives, shared by its files (store*.cpp, blob_writer.cpp) and by
// nobody else: temp file names, durable writes (temp + fsync + rename), bounded reads, and
// errors that name files by their base name only.
#include "models/store.h"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace specd::models {

// A pull's partial download (Store::resume_blob): a temp file named by its digest, so the
// next pull of that blob continues it.
inline constexpr std::string_view k_partial_prefix   = ".tmp-partial-";
inline constexpr size_t           k_max_manifest_len = 4u << 20;

StoreError error(ErrorKind kind, const std::string & message);
// Filesystem errors carry absolute paths in what(); keep only the reason.
StoreError io_error(const std::string & what, const std::error_code & ec);
StoreError io_error(const std::string & what, int err);

std::string base_name(const std::filesystem::path & p);
// Temp files (".tmp-*") are invisible to readers.
bool                  is_temp_name(const std::filesystem::path & p);
std::filesystem::path temp_path_in(const std::filesystem::path & dir);
std::chrono::system_clock::time_point to_system_time(std::filesystem::file_time_type t);

// Owns a POSIX file descriptor.
class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd &)             = delete;
    Fd & operator=(const Fd &) = delete;
    ~Fd();
    int get() const { return fd_; }

  private:
    int fd_;
};

void write_all(int fd, const void * data, size_t size);
// Makes a rename in `dir` durable. Best effort: some filesystems refuse fsync on directories.
void fsync_dir(const std::filesystem::path & dir);
// Creates `path`, which must not exist; returns its descriptor.
int  open_temp(const std::filesystem::path & path);
// temp + fsync + rename: readers see the old content or the new one, never a torn file.
void write_file_atomic(const std::filesystem::path & target, std::string_view bytes);
// The file's bytes; nullopt when it cannot be opened, StoreError above max_bytes.
std::optional<std::string> read_file(const std::filesystem::path & path, size_t max_bytes);

} // namespace specd::models
