// BlobWriter (store.h): one blob's bytes hashed into a temp file, then verified and renamed
// into place, or removed.
#include "models/store.h"

#include "models/store_io.h"

#include <cerrno>

#include <unistd.h>

namespace specd::models {

namespace fs = std::filesystem;

BlobWriter::BlobWriter(const Store & store, fs::path temp, int fd)
    : store_(&store), temp_(std::move(temp)), fd_(fd) {}

BlobWriter::BlobWriter(BlobWriter && other) noexcept
    : store_(other.store_),
      temp_(std::move(other.temp_)),
      fd_(other.fd_),
      size_(other.size_),
      hash_(std::move(other.hash_)),
      done_(other.done_),
      keep_(other.keep_) {
    other.fd_   = -1;
    other.done_ = true;
}

BlobWriter::~BlobWriter() {
    // Removed before it is closed: closing releases a resumable file's lock, and the next
    // writer must not take over a file that is about to go.
    if (!done_ && !keep_) {
        std::error_code ec;
        fs::remove(temp_, ec);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void BlobWriter::write(const void * data, size_t size) {
    if (done_) {
        throw error(ErrorKind::internal, "blob writer used after commit");
    }
    write_all(fd_, data, size);
    hash_.update(data, size);
    size_ += size;
}

std::string BlobWriter::digest() const {
    Sha256 copy = hash_;
    return copy.finish_digest();
}

void BlobWriter::restart() {
    if (done_) {
        throw error(ErrorKind::internal, "blob writer used after commit");
    }
    if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) < 0) {
        throw io_error("cannot write to the model store", errno);
    }
    hash_.reset();
    size_ = 0;
}

void BlobWriter::discard() {
    if (done_) {
        return;
    }
    done_ = true;
    std::error_code ec;
    fs::remove(temp_, ec);
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::string BlobWriter::commit(std::optional<std::string_view> expected) {
    if (done_) {
        throw error(ErrorKind::internal, "blob writer committed twice");
    }
    done_ = true; // from here on, every path removes or publishes the temp file itself
    // The file goes (or is renamed) before it is closed: closing releases a resumable
    // file's lock, and a waiting writer checks that the file it locked is still the temp.
    auto discard = [&] {
        std::error_code ec;
        fs::remove(temp_, ec);
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    };
    const std::string digest = hash_.finish_digest();
    if (expected) {
        auto want = normalize_digest(*expected);
        if (!want || *want != digest) {
            discard();
            throw error(ErrorKind::bad_request, "digest mismatch: expected " + std::string(*expected) + ", got " + digest);
        }
    }
    if (::fsync(fd_) != 0) {
        const int err = errno;
        discard();
        throw io_error("cannot sync the model store", err);
    }

    const fs::path  target = store_->blob_path(digest);
    std::error_code ec;
    if (fs::is_regular_file(target, ec) && fs::file_size(target, ec) == size_) {
        // Already stored: keep the existing file (readers may have it mapped) and mark it as
        // recently used so another process's age-based collection spares it.
        discard();
        fs::last_write_time(target, fs::file_time_type::clock::now(), ec);
        return digest;
    }
    fs::rename(temp_, target, ec);
    if (ec) {
        discard();
        throw io_error("cannot store blob " + digest, ec);
    }
    ::close(fd_);
    fd_ = -1;
    fsync_dir(target.parent_path());
    return digest;
}

} // namespace specd::models
