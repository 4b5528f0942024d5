#include "api/dashboard_report.h"

#include "api/memory_report.h"
#include "metrics/registry.h"

#include <chrono>

namespace specd::api {

namespace {

json live_json(const engine::LiveCounters & live) {
    return {{"generated", live.generated},     {"rounds", live.rounds},
            {"drafted", live.drafted},         {"accepted", live.accepted},
            {"forced", live.forced},           {"forced_accepted", live.forced_accepted},
            {"draft_decodes", live.draft_decodes}, {"depth", live.depth}};
}

} // namespace

json dashboard_json(const std::vector<scheduler::LoadedInfo> & models, const memory::LedgerSnapshot & ledger,
                    const memory::PromptCacheStats & cache) {
    json out_models = json::array();
    int    running  = 0;
    size_t queued   = 0;
    for (const auto & m : models) {
        out_models.push_back({{"name", m.name},
                              {"parallel", m.parallel},
                              {"running", m.running},
                              {"queued", m.queued},
                              {"threads", {{"decode", m.threads}, {"batch", m.threads_batch}, {"draft", m.draft_threads}}},
                              {"memory", bucket_json(model_buckets(ledger, m.memory_owner))},
                              {"live", live_json(m.live)}});
        running += m.running;
        queued += m.queued;
    }
    json memory = memory_debug_json(ledger, cache);
    memory.erase("reservations"); // one line per live reservation: the page needs the sums
    // The page draws one line per device: its name and its bytes (the host is "CPU").
    json devices = json::array();
    for (const json & d : memory["devices"]) devices.push_back({{"name", d["name"]}, {"bytes", d["total"]}});
    memory["devices"] = std::move(devices);

    const auto & metrics = metrics::server_metrics();
    const auto   now     = std::chrono::system_clock::now().time_since_epoch();
    return {{"time_ms", std::chrono::duration_cast<std::chrono::milliseconds>(now).count()},
            {"version", SPECD_VERSION},
            {"models", std::move(out_models)},
            {"memory", std::move(memory)},
            {"scheduler", {{"running", running},
                           {"queued", queued},
                           {"requests", metrics.requests_total.value()},
                           {"errors", metrics.request_errors_total.value()},
                           {"rejected", metrics.queue_rejected_total.value()},
                           {"loads", metrics.model_loads_total.value()},
                           {"evictions", metrics.model_evictions_total.value()}}}};
}

} // namespace specd::api
