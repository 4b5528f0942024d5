#pragma once
// GET /api/dashboard: one snapshot of what the dashboard page (/ui) charts, built from what
// /api/ps, /metrics and /api/debug/memory already compute. Counters are cumulative; the page
// turns them into rates between two snapshots (`time_ms` is the server's clock).
#include "api/json_input.h"
#include "cache/prompt_cache.h"
#include "memory/ledger.h"
#include "scheduler/runner.h"

#include <vector>

namespace specd::api {

json dashboard_json(const std::vector<scheduler::LoadedInfo> & models, const memory::LedgerSnapshot & ledger,
                    const cache::PromptCacheStats & cache);

} // namespace specd::api
