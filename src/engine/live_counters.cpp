#include "engine/live_counters.h"

#include <algorithm>

namespace specd::engine {

void LiveCounters::add_round(int64_t committed, int n_drafted, int n_accepted, int n_forced, int n_forced_accepted) {
    generated += std::max<int64_t>(0, committed);
    ++rounds;
    drafted += std::max(0, n_drafted);
    accepted += std::max(0, n_accepted);
    forced += std::max(0, n_forced);
    forced_accepted += std::max(0, n_forced_accepted);
    const size_t k = size_t(std::max(0, n_drafted));
    if (depth.size() <= k) depth.resize(k + 1, 0);
    ++depth[k];
}

void LiveCounters::add(const LiveCounters & other) {
    generated += other.generated;
    rounds += other.rounds;
    drafted += other.drafted;
    accepted += other.accepted;
    forced += other.forced;
    forced_accepted += other.forced_accepted;
    draft_decodes += other.draft_decodes;
    if (depth.size() < other.depth.size()) depth.resize(other.depth.size(), 0);
    for (size_t k = 0; k < other.depth.size(); ++k) depth[k] += other.depth[k];
}

} // namespace specd::engine
