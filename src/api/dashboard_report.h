#pragma once
// GET /api/dashboard: one snapshot of what the dashboard page (/ui) charts, built from what
// /api/ps, /metrics and /api/debug/memory already compute. Counters are cumulative; the page
// turns them into rates between two snapshots (`time_ms` is the server's clock).
#include "core/json_input.h"
#include "memory/ledger.h"
#include "memory/prompt_cache_stats.h"
#include "scheduler/runner.h"

#include <vector>

namespace specd::api {

json dashboard_json(const std::vector<scheduler::LoadedInfo> & models, const memory::LedgerSnapshot & ledger,
                    const memory::PromptCacheStats & cache);

} // namespace specd::api
