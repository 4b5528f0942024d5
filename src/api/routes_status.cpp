// What the server says about itself: health, version, metrics, memory, loaded models.
#include "api/http_json.h"
#include "api/load_report.h"
#include "api/memory_report.h"
#include "api/ollama_response.h"
#include "api/routes.h"
#include "core/time_format.h"
#include "memory/ledger.h"
#include "metrics/registry.h"
#include "prepare/model_catalog.h"

namespace specd::api {

namespace {

json loaded_models_json(const RouteContext & ctx) {
    json       models = json::array();
    const auto ledger = memory::process_ledger().snapshot();
    for (const auto & m : ctx.scheduler.loaded()) {
        // What the model holds, by bucket; `size` is all of it, as Ollama's counts the KV too.
        json           breakdown = bucket_json(model_buckets(ledger, m.memory_owner));
        const uint64_t size      = std::max<uint64_t>(m.size_bytes, breakdown["total"].get<uint64_t>());
        // Ollama's size_vram: what is on other devices than the host (here, RPC workers).
        json j = {{"name", m.name}, {"model", m.name}, {"size", size}, {"size_vram", offloaded_bytes(ledger, m.memory_owner)},
                  {"digest", prepare::bare_digest(m.digest)}, {"context_length", m.context_length},
                  {"details", {{"parent_model", ""}, {"format", "gguf"}, {"family", m.family}, {"families", json::array({m.family})},
                               {"parameter_size", m.parameter_size}, {"quantization_level", m.quantization_level}}}};
        // Ollama shows a far-future time for models kept forever.
        j["expires_at"] = m.expires_at ? format_time(*m.expires_at) : "2318-01-01T00:00:00Z";
        j["parallel"]   = m.parallel; // specd's: sequences decoded together (continuous batching)
        j["running"]    = m.running;  // specd's: sequences generating now, and requests waiting
        j["queued"]     = m.queued;
        j["threads"]    = {{"decode", m.threads}, {"batch", m.threads_batch}, {"draft", m.draft_threads}};
        j["kv_cache_type"] = m.kv_cache_type; // specd's: SPECD_KV_CACHE_TYPE as this model got it
        j["memory"]     = std::move(breakdown);
        j["devices"]    = model_devices_json(ledger, m.memory_owner); // specd's: the same bytes by device
        models.push_back(std::move(j));
    }
    return models;
}

} // namespace

void add_status_routes(http::Router & router, RouteContext ctx) {
    router.get("/", [](http::Request &, http::Response & res) { res.set_content("Ollama is running", "text/plain"); });
    router.get("/api/version", [](http::Request &, http::Response & res) { send_json(res, 200, {{"version", SPECD_VERSION}}); });
    router.get("/metrics", [ctx](http::Request &, http::Response & res) {
        res.set_content(metrics::server_metrics().exposition() +
                            memory_metrics(memory::process_ledger().snapshot(), ctx.prompt_cache_stats()) +
                            load_metrics(ctx.scheduler.loaded()),
                        "text/plain; version=0.0.4");
    });
    router.get("/api/debug/memory", [ctx](http::Request &, http::Response & res) {
        send_json(res, 200, memory_debug_json(memory::process_ledger().snapshot(), ctx.prompt_cache_stats()));
    });
    router.get("/api/ps", [ctx](http::Request &, http::Response & res) { send_json(res, 200, {{"models", loaded_models_json(ctx)}}); });
}

} // namespace specd::api
