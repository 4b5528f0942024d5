#include "cli/human_format.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>

namespace specd::cli {

std::string human_bytes(uint64_t bytes) {
    static const char * units[] = {"B", "KB", "MB", "GB", "TB"};
    double value = static_cast<double>(bytes);
    size_t unit  = 0;
    while (value >= 1000 && unit + 1 < std::size(units)) {
        value /= 1000;
        ++unit;
    }
    char buf[32];
    if (unit == 0 || value >= 10 || value == std::trunc(value)) {
        std::snprintf(buf, sizeof buf, "%d %s", static_cast<int>(value), units[unit]);
    } else {
        std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
    }
    return buf;
}

std::string human_duration(std::chrono::seconds d) {
    const long long seconds = d.count();
    if (seconds < 1) return "Less than a second";
    if (seconds == 1) return "1 second";
    if (seconds < 60) return std::to_string(seconds) + " seconds";
    const long long minutes = seconds / 60;
    if (minutes == 1) return "About a minute";
    if (minutes < 60) return std::to_string(minutes) + " minutes";
    const long long hours = std::llround(static_cast<double>(seconds) / 3600.0);
    if (hours == 1) return "About an hour";
    if (hours < 48) return std::to_string(hours) + " hours";
    if (hours < 24 * 7 * 2) return std::to_string(hours / 24) + " days";
    if (hours < 24 * 30 * 2) return std::to_string(hours / 24 / 7) + " weeks";
    if (hours < 24 * 365 * 2) return std::to_string(hours / 24 / 30) + " months";
    return std::to_string(hours / 24 / 365) + " years";
}

std::string human_time(Clock::time_point t, Clock::time_point now) {
    using namespace std::chrono;
    if (t - now > hours(24 * 365 * 20)) return "Forever";
    if (t > now) return human_duration(duration_cast<seconds>(t - now)) + " from now";
    return human_duration(duration_cast<seconds>(now - t)) + " ago";
}

std::optional<Clock::time_point> parse_rfc3339(const std::string & text) {
    std::tm tm{};
    int     consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
        return std::nullopt;
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    size_t pos = static_cast<size_t>(consumed);
    long long nanos = 0;
    if (pos < text.size() && text[pos] == '.') {
        long long scale = 100000000;
        for (++pos; pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])); ++pos) {
            nanos += (text[pos] - '0') * scale;
            scale /= 10;
        }
    }
    long offset = 0; // seconds east of UTC
    if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        int oh = 0, om = 0;
        if (std::sscanf(text.c_str() + pos + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
        offset = (text[pos] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    } else if (pos >= text.size() || (text[pos] != 'Z' && text[pos] != 'z')) {
        return std::nullopt;
    }
    const time_t utc = timegm(&tm) - offset;
    // The clock counts nanoseconds in 64 bits (years 1678 to 2262); the server's "never
    // expires" is later (2318), so a time outside that range is the clock's end.
    using std::chrono::seconds;
    constexpr auto last = std::chrono::duration_cast<seconds>(Clock::duration::max()).count() - 1;
    constexpr auto first = std::chrono::duration_cast<seconds>(Clock::duration::min()).count() + 1;
    if (utc > last) return Clock::time_point::max();
    if (utc < first) return Clock::time_point::min();
    return Clock::from_time_t(utc) + std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(nanos));
}

std::string human_nanoseconds(uint64_t ns) {
    char buf[32];
    if (ns >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.3fs", ns / 1e9);
    else if (ns >= 1000000ull) std::snprintf(buf, sizeof buf, "%.3fms", ns / 1e6);
    else if (ns >= 1000ull) std::snprintf(buf, sizeof buf, "%.3fµs", ns / 1e3);
    else std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
    return buf;
}

} // namespace specd::cli
