#pragma once
// Server settings from the environment: every SPECD_X falls back to OLLAMA_X, so an existing
// Ollama set-up keeps working.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace specd {

// SPECD_<name>, else OLLAMA_<name>; unset or empty -> nullopt.
std::optional<std::string> setting(const std::string & name);

struct HostPort {
    std::string host = "127.0.0.1";
    int         port = 11434;
};

// Ollama's OLLAMA_HOST forms: "host", "host:port", ":port", "http://host:port".
// Throws std::invalid_argument for anything else.
HostPort parse_host(const std::string & text);

// A size in bytes: digits with an optional K, M or G suffix (binary multiples, as nginx reads
// "64m"), optionally followed by "iB" or "B": "1048576", "64M", "64MiB", "2g". Throws
// std::invalid_argument for anything else, zero, or more than 2^63 bytes.
uint64_t parse_byte_size(const std::string & text);

HostPort              configured_host();
std::filesystem::path configured_models_dir();

} // namespace specd
