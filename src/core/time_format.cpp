#include "core/time_format.h"

#include <cstdio>
#include <ctime>

namespace specd {

std::string format_time(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    const auto    secs = time_point_cast<seconds>(t);
    const auto    ns   = duration_cast<nanoseconds>(t - secs).count();
    const time_t  tt   = system_clock::to_time_t(secs);
    std::tm       tm{};
    gmtime_r(&tt, &tm);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(ns));
    return buf;
}

} // namespace specd
