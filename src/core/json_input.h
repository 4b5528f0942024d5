#pragma once
// Reading request bodies: parse with limits, and typed field access whose errors name the
// field. Everything here throws specd::Error(bad_request).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace specd {

// Ordered: a JSON schema's property order is the order its answer must follow.
using json = nlohmann::ordered_json;

inline constexpr int k_max_json_depth = 128;

// Parses a request body: must be valid UTF-8 JSON, an object, nested at most
// k_max_json_depth deep (checked before parsing, so a hostile body cannot exhaust the stack).
json parse_body(std::string_view body);

std::optional<std::string> opt_string(const json & obj, const char * key);
std::optional<bool>        opt_bool(const json & obj, const char * key);
std::string                require_string(const json & obj, const char * key);

} // namespace specd
