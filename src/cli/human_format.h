#pragma once
// How the CLI shows sizes, durations and times, as Ollama's CLI does: "4.7 GB",
// "3 minutes ago", "4 minutes from now", "Forever".
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace specd::cli {

using Clock = std::chrono::system_clock;

// Decimal units: "512 B", "1.5 KB", "12 MB", "4.7 GB" (one decimal below 10 of a unit).
std::string human_bytes(uint64_t bytes);

// An approximate length: "Less than a second", "About a minute", "3 hours", "2 weeks", ...
std::string human_duration(std::chrono::seconds d);

// `t` relative to `now`: "3 minutes ago", "4 minutes from now", "Forever" (more than 20
// years ahead: a model kept loaded for good).
std::string human_time(Clock::time_point t, Clock::time_point now);

// RFC 3339 as the API writes it ("2024-05-01T12:00:00.123456789Z", "...+02:00"); nullopt
// for anything else. A time past what the clock holds (after 2262) is its max().
std::optional<Clock::time_point> parse_rfc3339(const std::string & text);

// A duration in nanoseconds as Go prints one, rounded: "1.234s", "20.1ms", "812µs".
std::string human_nanoseconds(uint64_t ns);

} // namespace specd::cli
