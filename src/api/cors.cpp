#include "api/cors.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace specd::api {

CorsPolicy::CorsPolicy(const std::string & extra) {
    for (const char * host : {"localhost", "127.0.0.1", "0.0.0.0", "[::1]"}) {
        for (const char * scheme : {"http://", "https://"}) {
            patterns_.push_back(std::string(scheme) + host);
            patterns_.push_back(std::string(scheme) + host + ":*");
        }
    }
    for (const char * p : {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"}) {
        patterns_.push_back(p);
    }
    std::stringstream ss(extra);
    for (std::string item; std::getline(ss, item, ',');) {
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (!item.empty()) patterns_.push_back(item);
    }
}

bool CorsPolicy::allows(const std::string & origin) const {
    for (const auto & p : patterns_) {
        if (glob_match(p, origin)) return true;
    }
    return false;
}

std::string CorsPolicy::allowed_headers(std::string_view requested) const {
    std::string out = "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, OpenAI-Beta";
    constexpr std::string_view stainless = "x-stainless-";
    while (!requested.empty()) {
        const auto comma = requested.find(',');
        auto       name  = requested.substr(0, comma);
        requested        = comma == std::string_view::npos ? std::string_view() : requested.substr(comma + 1);
        while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
        while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
        const bool token = std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '-'; });
        if (!token || name.size() <= stainless.size() || name.size() > 64) continue;
        std::string lower(name);
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        if (lower.compare(0, stainless.size(), stainless) == 0) out += ", " + lower;
    }
    return out;
}

bool glob_match(const std::string & pattern, const std::string & text) {
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    size_t p = 0, t = 0, star = std::string::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') { star = p++; mark = t; continue; }
        if (p < pattern.size() && pattern[p] == text[t]) { ++p; ++t; continue; }
        if (star == std::string::npos) return false;
        p = star + 1;
        t = ++mark;
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

} // namespace specd::api
