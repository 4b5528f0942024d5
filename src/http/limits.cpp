#include "http/limits.h"

#include <sys/resource.h>

#include <stdexcept>

namespace specd::http {

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
