#pragma once
// One message between the server and a runner process, over a file descriptor (one end of a
// Unix socket pair): a JSON head and binary attachments (image pixels, embeddings), so that
// bulk bytes travel as they are instead of inside JSON text.
//
// On the wire, all integers little-endian:
//   u32 head length, the head as compact JSON text,
//   u32 blob count, then per blob: u64 length, its bytes.
//
// Threading: neither function locks. Frames written to one fd from several threads would
// interleave; the caller holds a mutex around write_frame (and reads an fd from one thread).
// The fd is blocking: EAGAIN is an error like any other.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specd::process {

struct Frame {
    nlohmann::json           head;
    std::vector<std::string> blobs; // binary attachments; the head says what each one is
};

// What read_frame refuses, so that a corrupt or hostile length cannot make it allocate
// without bound; write_frame refuses the same frames before it writes a byte.
inline constexpr uint32_t k_frame_max_head  = 64u << 20;        // bytes of head text
inline constexpr uint32_t k_frame_max_blobs = 4096;
inline constexpr uint64_t k_frame_max_blob  = uint64_t(4) << 30; // bytes per blob

// Writes the whole frame, looping over partial writes and EINTR. On a socket it sends with
// MSG_NOSIGNAL, so a dead peer is an EPIPE error here rather than a SIGPIPE that ends the
// process (on a pipe, write() is used and SIGPIPE is the caller's to ignore). Throws
// std::runtime_error on failure (also for a head that is not valid UTF-8 JSON text); the
// stream is then unusable, as part of the frame may have been written.
void write_frame(int fd, const Frame & f);

// The next frame; nullopt when the peer closed the stream at a frame boundary. Throws
// std::runtime_error on an I/O error, an end of stream inside a frame, a length over the
// limits above, or a head that is not JSON.
std::optional<Frame> read_frame(int fd);

} // namespace specd::process
