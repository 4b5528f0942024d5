#include "api/access.h"

#include <algorithm>
#include <cctype>
#include <optional>

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

// RFC 9110 allows an empty port ("localhost:").
bool is_port(std::string_view p) {
    return p.size() <= 5 && std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The host part of a Host header: "[::1]:8080" -> "::1", "localhost:11434" -> "localhost";
// nullopt when what follows the host is not a port ("[::1]evil.com", "localhost:x").
std::optional<std::string> host_part(std::string_view h) {
    if (!h.empty() && h.front() == '[') {
        const auto close = h.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        const auto rest = h.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || !is_port(rest.substr(1)))) return std::nullopt;
        return std::string(h.substr(1, close - 1));
    }
    const auto colon = h.find(':');
    if (colon == std::string_view::npos) return std::string(h);
    if (!is_port(h.substr(colon + 1))) return std::nullopt;
    return std::string(h.substr(0, colon));
}

bool local_name(const std::string & h) {
    return h == "localhost" || (h.size() > 10 && h.ends_with(".localhost")) || is_ipv4_loopback(h) || h == "::1";
}

} // namespace

bool is_loopback(std::string_view host) { return local_name(lower(host)); }

bool host_header_allowed(std::string_view host_header) {
    if (host_header.empty()) return true;
    const auto host = host_part(host_header);
    return host && local_name(lower(*host));
}

bool is_dashboard_asset(std::string_view path) { return path == "/ui" || path.starts_with("/ui/"); }

bool api_key_matches(std::string_view authorization, std::string_view key) {
    constexpr std::string_view prefix = "Bearer ";
    if (key.empty() || authorization.size() != prefix.size() + key.size()) return false;
    if (authorization.substr(0, prefix.size()) != prefix) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(authorization[prefix.size() + i] ^ key[i]);
    return diff == 0;
}

} // namespace specd::api
