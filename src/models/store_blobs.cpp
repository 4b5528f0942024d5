// Store's blobs: writers (new and resumable), paths from validated digests, reads, and
// put_* that skip a copy when the blob is already stored.
#include "models/store.h"

#include "models/store_io.h"

#include <cerrno>
#include <fstream>
#include <vector>

// POSIX: flock for partial downloads, pread to re-hash what an earlier attempt left.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_copy_chunk = 1u << 20;

} // namespace

BlobWriter Store::begin_blob() {
    const fs::path temp = temp_path_in(blobs_dir_);
    return BlobWriter(*this, temp, open_temp(temp));
}

std::optional<BlobWriter> Store::resume_blob(std::string_view digest) {
    const fs::path target = blob_path(digest); // validates
    const fs::path temp   = blobs_dir_ / (std::string(k_partial_prefix) + target.filename().string());
    for (;;) {
        if (has_blob(digest)) {
            // A leftover partial download of it is useless; one a writer holds is its own.
            if (const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
                if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                    std::error_code ec;
                    fs::remove(temp, ec);
                }
                ::close(fd);
            }
            return std::nullopt;
        }
        const int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0) {
            throw io_error("cannot create a file in the model store", errno);
        }
        BlobWriter writer(*this, temp, fd);
        writer.keep_ = true;
        while (::flock(fd, LOCK_EX) != 0) {
            if (errno != EINTR) {
                throw io_error("cannot lock a download in the model store", errno);
            }
        }
        // The writer we waited for may have committed or removed the file since we opened it.
        struct stat held {}, now {};
        if (::fstat(fd, &held) != 0 || ::stat(temp.c_str(), &now) != 0 || held.st_dev != now.st_dev ||
            held.st_ino != now.st_ino) {
            writer.done_ = true; // not ours to remove
            continue;
        }
        if (has_blob(digest)) {
            writer.discard(); // a leftover next to the finished blob
            return std::nullopt;
        }
        // Hash what an earlier attempt left, to continue the digest from there.
        std::vector<char> buf(k_copy_chunk);
        for (;;) {
            const ssize_t n = ::pread(fd, buf.data(), buf.size(), off_t(writer.size_));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                throw io_error("cannot read a partial download", errno);
            }
            if (n == 0) {
                break;
            }
            writer.hash_.update(buf.data(), size_t(n));
            writer.size_ += uint64_t(n);
        }
        return std::optional<BlobWriter>(std::move(writer));
    }
}

fs::path Store::blob_path(std::string_view digest) const {
    auto name = blob_filename(digest);
    if (!name) {
        throw error(ErrorKind::bad_request, "invalid digest (expected sha256:<64 hex digits>)");
    }
    return blobs_dir_ / *name;
}

bool Store::has_blob(std::string_view digest) const {
    std::error_code ec;
    return fs::is_regular_file(blob_path(digest), ec);
}

std::string Store::read_blob(std::string_view digest, size_t max_bytes) const {
    const fs::path path = blob_path(digest);
    auto           text = read_file(path, max_bytes);
    if (!text) {
        throw error(ErrorKind::internal, "blob " + std::string(digest) + " is missing from the model store");
    }
    return std::move(*text);
}

std::string Store::put_blob_from_bytes(std::string_view bytes) {
    bool existed = false;
    return put_bytes(bytes, &existed);
}

std::string Store::put_bytes(std::string_view bytes, bool * existed) {
    WriteGuard        guard(*this);
    const std::string digest = sha256_digest(bytes);
    std::error_code   ec;
    const fs::path    path = blob_path(digest);
    if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == bytes.size()) {
        *existed = true;
        fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
        return digest;
    }
    *existed          = false;
    BlobWriter writer = begin_blob();
    writer.write(bytes);
    return writer.commit(digest);
}

std::string Store::put_blob_from_file(const fs::path & src) {
    bool existed = false;
    return put_file(src, &existed);
}

std::string Store::put_file(const fs::path & src, bool * existed) {
    WriteGuard      guard(*this);
    std::error_code ec;
    if (fs::is_directory(src, ec)) {
        throw error(ErrorKind::bad_request, base_name(src) + " is a directory, not a file");
    }
    std::ifstream in(src, std::ios::binary);
    if (!in) {
        throw error(fs::exists(src, ec) ? ErrorKind::bad_request : ErrorKind::not_found,
                    (fs::exists(src, ec) ? "cannot read " : "no such file: ") + base_name(src));
    }
    std::vector<char> buf(k_copy_chunk);
    auto              read_chunk = [&]() -> size_t {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.bad()) {
            throw error(ErrorKind::internal, "cannot read " + base_name(src));
        }
        return size_t(in.gcount());
    };

    // Creating several models from one GGUF is common (a new tag that only changes SYSTEM):
    // when a blob of the same size exists, hash first and skip a multi-gigabyte copy.
    const uint64_t src_size  = fs::file_size(src, ec);
    bool           same_size = false;
    for (const auto & entry : fs::directory_iterator(blobs_dir_, ec)) {
        std::error_code e;
        if (!is_temp_name(entry.path()) && entry.is_regular_file(e) && entry.file_size(e) == src_size) {
            same_size = true;
            break;
        }
    }
    if (same_size) {
        Sha256 hash;
        for (size_t n; (n = read_chunk()) > 0;) {
            hash.update(buf.data(), n);
        }
        const std::string digest = hash.finish_digest();
        if (has_blob(digest)) {
            *existed = true;
            fs::last_write_time(blob_path(digest), fs::file_time_type::clock::now(), ec);
            return digest;
        }
        in.clear();
        in.seekg(0);
    }

    *existed          = false;
    BlobWriter writer = begin_blob();
    for (size_t n; (n = read_chunk()) > 0;) {
        writer.write(buf.data(), n);
    }
    return writer.commit();
}

} // namespace specd::models
