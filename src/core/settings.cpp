#include "core/settings.h"

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace specd {

std::optional<std::string> setting(const std::string & name) {
    for (const char * prefix : {"SPECD_", "OLLAMA_"}) {
        const char * v = std::getenv((prefix + name).c_str());
        if (v && *v) return std::string(v);
    }
    return std::nullopt;
}

HostPort parse_host(const std::string & text) {
    std::string s = text;
    for (const char * scheme : {"http://", "https://"}) {
        if (s.rfind(scheme, 0) == 0) s = s.substr(std::string(scheme).size());
    }
    while (!s.empty() && s.back() == '/') s.pop_back();
    HostPort hp;
    std::string port;
    if (!s.empty() && s.front() == '[') { // [::1]:port
        const auto close = s.find(']');
        if (close == std::string::npos) throw std::invalid_argument("invalid host: " + text);
        hp.host = s.substr(1, close - 1);
        if (close + 1 < s.size()) {
            if (s[close + 1] != ':') throw std::invalid_argument("invalid host: " + text);
            port = s.substr(close + 2);
        }
    } else if (auto colon = s.rfind(':'); colon != std::string::npos) {
        if (colon > 0) hp.host = s.substr(0, colon);
        port = s.substr(colon + 1);
    } else if (!s.empty()) {
        hp.host = s;
    }
    if (!port.empty()) {
        if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5) {
            throw std::invalid_argument("invalid port in host: " + text);
        }
        hp.port = std::stoi(port);
        if (hp.port > 65535) throw std::invalid_argument("invalid port in host: " + text);
    }
    return hp;
}

uint64_t parse_byte_size(const std::string & text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 19) throw std::invalid_argument("invalid size: \"" + text + "\"");
    std::string unit = text.substr(digits);
    for (auto & c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    int shift = 0;
    if (!unit.empty() && (unit[0] == 'k' || unit[0] == 'm' || unit[0] == 'g')) {
        shift = unit[0] == 'k' ? 10 : unit[0] == 'm' ? 20 : 30;
        unit  = unit.substr(1);
        if (unit == "ib") unit = "b";
    }
    if (!unit.empty() && unit != "b") throw std::invalid_argument("invalid size: \"" + text + "\" (use bytes, K, M or G)");
    const uint64_t n = std::stoull(text.substr(0, digits));
    if (n == 0) throw std::invalid_argument("invalid size: \"" + text + "\" (must be above 0)");
    if (n > (uint64_t(1) << (63 - shift))) throw std::invalid_argument("invalid size: \"" + text + "\" (too large)");
    return n << shift;
}

HostPort configured_host() {
    auto v = setting("HOST");
    return v ? parse_host(*v) : HostPort{};
}

std::filesystem::path configured_models_dir() {
    if (auto v = setting("MODELS")) return *v;
    const char * home = std::getenv("HOME");
    return std::filesystem::path(home && *home ? home : ".") / ".specd" / "models";
}

} // namespace specd
