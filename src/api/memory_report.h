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

// The name the host's memory goes by in device lists, as ggml calls its CPU device.
inline constexpr const char * k_host_device = "CPU";

// [{"name": "CPU", <bucket_json>}, {"name": "RPC0[127.0.0.1:50052]", ...}]: the host first
// (what `all` holds that no other device does), then each other device.
json devices_json(const memory::BucketBytes & all, const memory::DeviceBuckets & elsewhere);
// The same for one model's owner.
json model_devices_json(const memory::LedgerSnapshot & ledger, uint64_t owner_id);
// A model's bytes on other devices than the host (Ollama's size_vram).
uint64_t offloaded_bytes(const memory::LedgerSnapshot & ledger, uint64_t owner_id);

// GET /api/debug/memory: totals, owners, every live reservation, the cache, the process RSS
// and what the allocator says about the memory it manages.
json memory_debug_json(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache);

// The memory and prompt-cache series of /metrics.
std::string memory_metrics(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache);

} // namespace specd::api
