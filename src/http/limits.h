#pragma once
// How much the transport lets any client hold: time to send a request head, time a silent
// connection is kept, open connections (all, and per client address), body size, handler
// threads. `specd serve` reads the settings (docs/api.md, Connections); the head's shape
// limits are fixed.
#include <chrono>
#include <cstddef>
#include <string>

namespace specd::http {

using Millis = std::chrono::milliseconds;

struct Limits {
    size_t max_body        = size_t(64) << 20;   // SPECD_MAX_BODY: bodies read whole (413 above)
    Millis head_timeout    = std::chrono::seconds(10); // SPECD_HEAD_TIMEOUT: the whole request head
    Millis idle_timeout    = std::chrono::seconds(30); // SPECD_IDLE_TIMEOUT: a silent peer (keep-alive, body, stalled write)
    size_t max_connections = 4096;               // SPECD_MAX_CONNECTIONS (and below the open-file limit)
    size_t max_connections_per_client = 2048;    // SPECD_MAX_CONNECTIONS_PER_CLIENT: per peer address
    size_t max_handler_threads        = 512;     // requests handled at once; more wait in arrival order

    static constexpr Millis k_max_head_timeout = std::chrono::seconds(15);
    // The request head: request line, header fields, the blank line.
    static constexpr size_t k_max_head        = 64 * 1024;
    static constexpr size_t k_max_target      = 32 * 1024;
    static constexpr size_t k_max_fields      = 100;
    static constexpr size_t k_max_field_line  = 8192;
    // How long an answer that ends the connection waits for the rest of an unread body to
    // drain (closing on unread bytes would reset the connection and lose the answer).
    static constexpr Millis k_linger = std::chrono::seconds(2);
};

// A duration: "10s", "500ms", "2m", or plain seconds ("10"). Throws std::invalid_argument.
Millis parse_duration(const std::string & text);

// Raises the soft limit on open files to the hard limit (Debian's soft default, 1024, is less
// than the connections allowed) and returns the soft limit now in force.
size_t raise_open_file_limit();

} // namespace specd::http
