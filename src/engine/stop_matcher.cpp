#include "engine/stop_matcher.h"

#include <algorithm>

namespace specd::engine {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (auto & s : stops) {
        if (!s.empty()) stops_.push_back(std::move(s));
    }
}

StopMatcher::Result StopMatcher::push(std::string_view text) {
    held_.append(text);
    Result r;
    // The earliest complete match wins.
    size_t first = std::string::npos;
    for (const auto & s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
        r.text    = held_.substr(0, first);
        r.stopped = true;
        held_.clear();
        return r;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const auto & s : stops_) {
        const size_t max_len = std::min(s.size() - 1, held_.size());
        for (size_t len = max_len; len > hold; --len) {
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) { hold = len; break; }
        }
    }
    r.text = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    return r;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

} // namespace specd::engine
