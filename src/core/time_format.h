#pragma once
// Timestamps as Ollama's responses write them (Go's time.Time in JSON).
#include <chrono>
#include <string>

namespace specd {

// RFC 3339 with nanoseconds, UTC, as Ollama writes timestamps.
std::string format_time(std::chrono::system_clock::time_point t);

} // namespace specd
