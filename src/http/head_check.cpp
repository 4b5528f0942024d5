#include "http/head_check.h"

#include "http/limits.h"

namespace specd::http {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

std::optional<Refusal> check_head(const Request & head) {
    if (head.target.size() > Limits::k_max_target) {
        return Refusal{414, "request target is longer than " + std::to_string(Limits::k_max_target) + " bytes"};
    }
    bool too_long = false;
    for (const auto & [name, value] : head.headers.fields()) {
        too_long = too_long || name.size() + 2 + value.size() > Limits::k_max_field_line;
    }
    if (head.headers.fields().size() > Limits::k_max_fields || too_long) {
        return Refusal{400, "invalid request headers (at most " + std::to_string(Limits::k_max_fields) +
                                " header fields, each line at most " + std::to_string(Limits::k_max_field_line) + " bytes)"};
    }
    // Which Host would a check of the name read? Two are a malformed request (RFC 9112 3.2).
    if (head.headers.count("Host") > 1) return Refusal{400, "invalid request headers: more than one Host field"};
    return std::nullopt;
}

std::string decode_path(std::string_view path) {
    std::string out;
    out.reserve(path.size());
    for (size_t i = 0; i < path.size(); ++i) {
        const int hi = path[i] == '%' && i + 2 < path.size() ? hex_value(path[i + 1]) : -1;
        const int lo = hi >= 0 ? hex_value(path[i + 2]) : -1;
        if (lo >= 0) {
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else {
            out += path[i];
        }
    }
    return out;
}

} // namespace specd::http
