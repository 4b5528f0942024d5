#pragma once
// The runner protocol: frames (process/frame.h) between the server and a runner process over
// a Unix socket pair, each with a head {"t": type, ...}. docs/process.md describes every
// message; this header names them, so that both sides spell them alike.
//
// server -> runner: hello, job, cancel, unload, room, cache_budget, stop
// runner -> server: hello, started, event, state, make_room, end_load, unloaded
#include <cstddef>
#include <cstdint>
#include <string>

namespace specd::process {

// Raised when a message changes meaning; both sides refuse a peer of another version (a
// server and a runner are the same executable, so this only catches a binary replaced on
// disk while the server ran).
inline constexpr int k_protocol_version = 1;

namespace msg {
inline constexpr const char * hello     = "hello";
inline constexpr const char * job       = "job";
inline constexpr const char * cancel    = "cancel";
inline constexpr const char * unload    = "unload";
inline constexpr const char * room      = "room";
inline constexpr const char * stop      = "stop";
inline constexpr const char * cache_budget = "cache_budget";
inline constexpr const char * started   = "started";
inline constexpr const char * event     = "event";
inline constexpr const char * state     = "state";
inline constexpr const char * make_room = "make_room";
inline constexpr const char * end_load  = "end_load";
inline constexpr const char * unloaded  = "unloaded";
} // namespace msg

// What a runner needs from its server at start (the hello's "config").
struct RunnerSettings {
    std::string model;                   // the model name the scheduler made this runner for
    uint64_t    spawn_serial       = 0;  // 1 for the model's first runner, 2 after a restart ...
    size_t      max_queue          = 512;
    int64_t     keep_alive_ns      = 0;
    int         num_parallel       = 0;
    size_t      prompt_cache_bytes = 0;  // its share of the server's prompt cache (0: none)
    bool        arbiter            = false; // loads ask the server for room
};

} // namespace specd::process
