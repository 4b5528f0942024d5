#pragma once
// The ledger and the prompt cache as the API shows them: JSON for /api/ps and
// /api/debug/memory, Prometheus text for /metrics.
#include "core/json_input.h"
#include "memory/ledger.h"
#include "memory/prompt_cache_stats.h"

#include <string>

namespace specd::api {

// {"weights": n, ..., "request": n, "total": n}
json bucket_json(const memory::BucketBytes & buckets);

// What the ledger holds for one model's owner (zeros when it has none).
memory::BucketBytes model_buckets(const memory::LedgerSnapshot & ledger, uint64_t owner_id);

// GET /api/debug/memory: totals, owners, every live reservation, the cache, the process RSS
// and what the allocator says about the memory it manages.
json memory_debug_json(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache);

// The memory and prompt-cache series of /metrics.
std::string memory_metrics(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache);

} // namespace specd::api
