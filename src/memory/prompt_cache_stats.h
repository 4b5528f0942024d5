#pragma once
// The prompt cache's counters as plain data, for the reports that show them (/metrics,
// /api/debug/memory, the dashboard) without depending on the cache itself (cache/).
#include <cstddef>
#include <cstdint>

namespace specd::memory {

struct PromptCacheStats {
    size_t   budget_bytes = 0;
    size_t   bytes        = 0; // held by entries in the cache (pinned, evicted ones excluded)
    size_t   entries      = 0;
    size_t   tokens       = 0; // target tokens held by the entries
    uint64_t hits         = 0;
    uint64_t misses       = 0;
    uint64_t tokens_reused = 0;
    uint64_t evictions    = 0;
    uint64_t stores       = 0;
    uint64_t rejected     = 0; // states larger than the whole budget, or no room next to pinned ones
};

} // namespace specd::memory
