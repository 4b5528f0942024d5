#include "api/access.h"

#include <algorithm>
#include <cctype>

namespace specd::api {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool is_ipv4_loopback(std::string_view h) {
    if (h.rfind("127.", 0) != 0) return false;
    int dots = 0;
    for (char c : h) {
        if (c == '.') ++dots;
        else if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    return dots == 3;
}

// The host part of a Host header: "[::1]:8080" -> "::1", "localhost:11434" -> "localhost".
std::string strip_port(std::string_view h) {
    if (!h.empty() && h.front() == '[') {
        const auto close = h.find(']');
        return std::string(close == std::string_view::npos ? h : h.substr(1, close - 1));
    }
    const auto colon = h.rfind(':');
    if (colon != std::string_view::npos && h.find(':') == colon) return std::string(h.substr(0, colon));
    return std::string(h);
}

bool local_name(const std::string & h) {
    return h == "localhost" || (h.size() > 10 && h.ends_with(".localhost")) || is_ipv4_loopback(h) || h == "::1";
}

} // namespace

bool is_loopback(std::string_view host) { return local_name(lower(host)); }

bool host_header_allowed(std::string_view host_header) {
    if (host_header.empty()) return true;
    return local_name(lower(strip_port(host_header)));
}

bool api_key_matches(std::string_view authorization, std::string_view key) {
    constexpr std::string_view prefix = "Bearer ";
    if (key.empty() || authorization.size() != prefix.size() + key.size()) return false;
    if (authorization.substr(0, prefix.size()) != prefix) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(authorization[prefix.size() + i] ^ key[i]);
    return diff == 0;
}

} // namespace specd::api
