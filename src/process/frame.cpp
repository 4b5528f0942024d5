#include "process/frame.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace specd::process {

namespace {

// Blobs up to this size are copied behind the lengths before them, so that a frame of small
// parts costs one system call; larger ones are written from where they lie.
constexpr size_t k_coalesce_max = 64u << 10;

// A blob is read into memory this much at a time.
constexpr size_t k_read_chunk = 64u << 20;

template <class T> void put_le(std::string & out, T v) {
    for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>(static_cast<uint8_t>(v >> (8 * i))));
}

template <class T> T get_le(const unsigned char * p) {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(p[i]) << (8 * i);
    return v;
}

// std::system_error is a std::runtime_error whose code() says which error it was (EPIPE: the
// peer is gone).
[[noreturn]] void throw_errno(const std::string & what) {
    throw std::system_error(errno, std::generic_category(), "frame: " + what);
}

class Writer {
  public:
    explicit Writer(int fd) : fd_(fd) {}

    void put(const char * data, size_t size) {
        while (size > 0) {
            const ssize_t n = socket_ ? ::send(fd_, data, size, MSG_NOSIGNAL) : ::write(fd_, data, size);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (socket_ && errno == ENOTSOCK) {
                    socket_ = false;
                    continue;
                }
                throw_errno("write failed");
            }
            if (n == 0) throw std::runtime_error("frame: write failed: no byte was written");
            data += n;
            size -= static_cast<size_t>(n);
        }
    }

  private:
    int  fd_;
    bool socket_ = true; // until send() says ENOTSOCK
};

// Exactly `size` bytes. False only when `may_end` and the stream ended before the first.
bool read_exact(int fd, char * data, size_t size, bool may_end, const char * what) {
    size_t got = 0;
    while (got < size) {
        const ssize_t n = ::read(fd, data + got, size - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw_errno(std::string("reading the ") + what + " failed");
        }
        if (n == 0) {
            if (got == 0 && may_end) return false;
            throw std::runtime_error(std::string("frame: the stream ended inside a frame (in its ") + what + ")");
        }
        got += static_cast<size_t>(n);
    }
    return true;
}

} // namespace

void write_frame(int fd, const Frame & f) {
    std::string text;
    try {
        text = f.head.dump();
    } catch (const nlohmann::json::exception & e) {
        // A string that is not valid UTF-8: nlohmann refuses to write it (type_error 316).
        throw std::runtime_error(std::string("frame: the head cannot be written as JSON: ") + e.what());
    }
    // The reader's limits, checked before a byte is written, so that the stream stays usable.
    if (text.size() > k_frame_max_head) {
        throw std::runtime_error("frame: head of " + std::to_string(text.size()) + " bytes is over the limit of " +
                                 std::to_string(k_frame_max_head));
    }
    if (f.blobs.size() > k_frame_max_blobs) {
        throw std::runtime_error("frame: " + std::to_string(f.blobs.size()) + " blobs are over the limit of " +
                                 std::to_string(k_frame_max_blobs));
    }
    for (const std::string & blob : f.blobs) {
        if (blob.size() > k_frame_max_blob) {
            throw std::runtime_error("frame: blob of " + std::to_string(blob.size()) + " bytes is over the limit of " +
                                     std::to_string(k_frame_max_blob));
        }
    }

    Writer      out(fd);
    std::string pending;
    pending.reserve(4 + text.size() + 4 + 8);
    put_le<uint32_t>(pending, static_cast<uint32_t>(text.size()));
    pending += text;
    put_le<uint32_t>(pending, static_cast<uint32_t>(f.blobs.size()));
    for (const std::string & blob : f.blobs) {
        put_le<uint64_t>(pending, blob.size());
        if (blob.size() <= k_coalesce_max) {
            pending += blob;
            continue;
        }
        out.put(pending.data(), pending.size());
        pending.clear();
        out.put(blob.data(), blob.size());
    }
    out.put(pending.data(), pending.size());
}

std::optional<Frame> read_frame(int fd) {
    unsigned char word[8];
    if (!read_exact(fd, reinterpret_cast<char *>(word), 4, true, "head length")) return std::nullopt;
    const uint32_t head_size = get_le<uint32_t>(word);
    if (head_size > k_frame_max_head) {
        throw std::runtime_error("frame: head of " + std::to_string(head_size) + " bytes is over the limit of " +
                                 std::to_string(k_frame_max_head));
    }
    std::string text(head_size, '\0');
    read_exact(fd, text.data(), text.size(), false, "head");

    Frame f;
    try {
        f.head = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception & e) {
        throw std::runtime_error(std::string("frame: the head is not JSON: ") + e.what());
    }

    read_exact(fd, reinterpret_cast<char *>(word), 4, false, "blob count");
    const uint32_t count = get_le<uint32_t>(word);
    if (count > k_frame_max_blobs) {
        throw std::runtime_error("frame: " + std::to_string(count) + " blobs are over the limit of " +
                                 std::to_string(k_frame_max_blobs));
    }
    f.blobs.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
        read_exact(fd, reinterpret_cast<char *>(word), 8, false, "blob length");
        const uint64_t size = get_le<uint64_t>(word);
        if (size > k_frame_max_blob) {
            throw std::runtime_error("frame: blob of " + std::to_string(size) + " bytes is over the limit of " +
                                     std::to_string(k_frame_max_blob));
        }
        // Grown a chunk at a time as its bytes arrive, so that a length that the bytes never
        // follow (a peer that died, a corrupt stream) costs at most one chunk beyond them.
        std::string & blob = f.blobs.emplace_back();
        blob.reserve(static_cast<size_t>(std::min<uint64_t>(size, k_read_chunk)));
        while (blob.size() < size) {
            const size_t at = blob.size();
            const size_t n  = static_cast<size_t>(std::min<uint64_t>(size - at, k_read_chunk));
            blob.resize(at + n);
            read_exact(fd, blob.data() + at, n, false, "blob");
        }
    }
    return f;
}

} // namespace specd::process
