// The store's file primitives (store_io.h).
#include "models/store_io.h"

#include <cerrno>
#include <fstream>
#include <random>

// POSIX for fsync: the standard library cannot make a write durable before the rename that
// publishes it, and without that a crash can leave a renamed but empty file.
#include <fcntl.h>
#include <unistd.h>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_temp_prefix = ".tmp-";

} // namespace

StoreError error(ErrorKind kind, const std::string & message) { return StoreError(kind, message); }

StoreError io_error(const std::string & what, const std::error_code & ec) {
    return error(ErrorKind::internal, what + ": " + ec.message());
}

StoreError io_error(const std::string & what, int err) {
    return io_error(what, std::error_code(err, std::generic_category()));
}

std::string base_name(const fs::path & p) {
    auto name = p.filename().string();
    return name.empty() ? p.parent_path().filename().string() : name;
}

bool is_temp_name(const fs::path & p) { return p.filename().string().starts_with(k_temp_prefix); }

fs::path temp_path_in(const fs::path & dir) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char        digits[] = "0123456789abcdef";
    std::string                  name(k_temp_prefix);
    for (uint64_t bits = rng(), i = 0; i < 16; ++i, bits >>= 4) {
        name += digits[bits & 0xf];
    }
    return dir / name;
}

std::chrono::system_clock::time_point to_system_time(fs::file_time_type t) {
    return std::chrono::time_point_cast<std::chrono::system_clock::duration>(std::chrono::file_clock::to_sys(t));
}

Fd::~Fd() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void write_all(int fd, const void * data, size_t size) {
    auto * p = static_cast<const char *>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw io_error("cannot write to the model store", errno);
        }
        p += n;
        size -= size_t(n);
    }
}

void fsync_dir(const fs::path & dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

int open_temp(const fs::path & path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw io_error("cannot create a file in the model store", errno);
    }
    return fd;
}

void write_file_atomic(const fs::path & target, std::string_view bytes) {
    const fs::path temp = temp_path_in(target.parent_path());
    try {
        Fd fd(open_temp(temp));
        write_all(fd.get(), bytes.data(), bytes.size());
        if (::fsync(fd.get()) != 0) {
            throw io_error("cannot sync the model store", errno);
        }
    } catch (...) {
        std::error_code ec;
        fs::remove(temp, ec);
        throw;
    }
    std::error_code ec;
    fs::rename(temp, target, ec);
    if (ec) {
        fs::remove(temp, ec);
        throw io_error("cannot write " + base_name(target), ec);
    }
    fsync_dir(target.parent_path());
}

std::optional<std::string> read_file(const fs::path & path, size_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::string out;
    char        buf[65536];
    while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
        out.append(buf, size_t(in.gcount()));
        if (out.size() > max_bytes) {
            throw error(ErrorKind::internal, base_name(path) + " is larger than expected");
        }
    }
    return out;
}

} // namespace specd::models
