#pragma once
// The engine's one clock for timing decodes and rounds: monotonic nanoseconds.
#include <chrono>
#include <cstdint>

namespace specd::engine {

inline int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace specd::engine
