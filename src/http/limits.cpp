#include "http/limits.h"

#include "core/settings.h"

#include <sys/resource.h>

#include <stdexcept>

namespace specd::http {

namespace {

size_t parse_count(const std::string & name, const std::string & text) {
    size_t used = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(text, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != text.size() || n == 0 || text.front() == '-') {
        throw std::invalid_argument(name + " must be a positive number, not \"" + text + "\"");
    }
    return static_cast<size_t>(n);
}

} // namespace

Millis parse_duration(const std::string & text) {
    size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9) throw std::invalid_argument("invalid duration: \"" + text + "\"");
    const long long n    = std::stoll(text.substr(0, digits));
    const std::string unit = text.substr(digits);
    if (unit.empty() || unit == "s") return std::chrono::seconds(n);
    if (unit == "ms") return Millis(n);
    if (unit == "m") return std::chrono::minutes(n);
    throw std::invalid_argument("invalid duration: \"" + text + "\" (use ms, s or m)");
}

Limits limits_from_env() {
    Limits l;
    if (auto v = setting("MAX_BODY")) l.max_body = parse_byte_size(*v);
    if (auto v = setting("HEAD_TIMEOUT")) {
        l.head_timeout = parse_duration(*v);
        if (l.head_timeout <= Millis(0) || l.head_timeout > Limits::k_max_head_timeout) {
            throw std::invalid_argument("HEAD_TIMEOUT must be above 0 and at most 15s, not \"" + *v + "\"");
        }
    }
    if (auto v = setting("IDLE_TIMEOUT")) {
        l.idle_timeout = parse_duration(*v);
        if (l.idle_timeout <= Millis(0)) throw std::invalid_argument("IDLE_TIMEOUT must be above 0, not \"" + *v + "\"");
    }
    if (auto v = setting("MAX_CONNECTIONS")) l.max_connections = parse_count("MAX_CONNECTIONS", *v);
    if (auto v = setting("MAX_CONNECTIONS_PER_CLIENT")) {
        l.max_connections_per_client = parse_count("MAX_CONNECTIONS_PER_CLIENT", *v);
    }
    return l;
}

size_t raise_open_file_limit() {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    return lim.rlim_cur == RLIM_INFINITY ? size_t(1) << 20 : static_cast<size_t>(lim.rlim_cur);
}

} // namespace specd::http
