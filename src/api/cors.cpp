#include "api/cors.h"

#include <sstream>

namespace specd::api {

CorsPolicy::CorsPolicy(const std::string & extra) {
    for (const char * host : {"localhost", "127.0.0.1", "0.0.0.0", "[::1]"}) {
        for (const char * scheme : {"http://", "https://"}) {
            patterns_.push_back(std::string(scheme) + host);
            patterns_.push_back(std::string(scheme) + host + ":*");
        }
    }
    for (const char * p : {"app://*", "file://*", "tauri://*", "vscode-webview://*"}) patterns_.push_back(p);
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
