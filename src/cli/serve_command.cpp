// `specd serve` (also `specd start`): the settings and flags into a ServerConfig, then the
// server until SIGINT or SIGTERM. This is the composition root: it builds the store, the
// prompt cache and the scheduler, and hands them to the server.
#include "api/ollama_request.h"
#include "api/server.h"
#include "cache/prompt_cache.h"
#include "cli/commands.h"
#include "cli/terminal.h"
#include "core/rpc_endpoints.h"
#include "core/settings.h"
#include "engine/devices.h"
#include "engine/kv_cache_type.h"
#include "engine/layer_placement.h"
#include "engine/rpc_workers.h"
#include "http/limits.h"
#include "memory/ledger.h"
#include "models/store.h"
#include "prepare/options.h"
#include "process/child_process.h"
#include "process/runner_process.h"
#include "scheduler/load_estimate.h"
#include "scheduler/scheduler.h"

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <pthread.h>
#include <thread>

namespace specd::cli {

namespace {

std::chrono::nanoseconds default_keep_alive() {
    if (auto v = setting("KEEP_ALIVE")) {
        if (auto ka = api::parse_keep_alive(nlohmann::json(*v))) return *ka;
    }
    return std::chrono::minutes(5);
}

// --parallel / NUM_PARALLEL: 1 to 256 sequences per model; 0 chooses from the memory budget.
int parse_parallel(const std::string & text) {
    size_t used = 0;
    int    n    = -1;
    try {
        n = std::stoi(text, &used);
    } catch (const std::exception &) {
        n = -1; // not a number: reported below
    }
    if (used != text.size() || n < 0 || n > scheduler::k_max_parallel) {
        throw std::invalid_argument("parallel sequences must be a number from 0 (automatic) to " +
                                    std::to_string(scheduler::k_max_parallel) + ", not \"" + text + "\"");
    }
    return n;
}

size_t parse_count(const std::string & name, const std::string & text) {
    size_t             used = 0;
    unsigned long long n    = 0;
    try {
        n = std::stoull(text, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != text.size() || n == 0 || text.front() == '-') {
        throw std::invalid_argument(name + " must be a positive number, not \"" + text + "\"");
    }
    return static_cast<size_t>(n);
}

// The transport's limits: the defaults (http/limits.h) under the settings.
http::Limits connection_limits() {
    http::Limits l;
    if (auto v = setting("MAX_BODY")) l.max_body = parse_byte_size(*v);
    if (auto v = setting("HEAD_TIMEOUT")) {
        l.head_timeout = http::parse_duration(*v);
        if (l.head_timeout <= http::Millis(0) || l.head_timeout > http::Limits::k_max_head_timeout) {
            throw std::invalid_argument("HEAD_TIMEOUT must be above 0 and at most 15s, not \"" + *v + "\"");
        }
    }
    if (auto v = setting("IDLE_TIMEOUT")) {
        l.idle_timeout = http::parse_duration(*v);
        if (l.idle_timeout <= http::Millis(0)) throw std::invalid_argument("IDLE_TIMEOUT must be above 0, not \"" + *v + "\"");
    }
    if (auto v = setting("MAX_CONNECTIONS")) l.max_connections = parse_count("MAX_CONNECTIONS", *v);
    if (auto v = setting("MAX_CONNECTIONS_PER_CLIENT")) {
        l.max_connections_per_client = parse_count("MAX_CONNECTIONS_PER_CLIENT", *v);
    }
    return l;
}

} // namespace

int cmd_serve(const ServeOptions & o) {
    api::ServerConfig          cfg;
    std::filesystem::path      models_dir;
    size_t                     prompt_cache_bytes = cache::default_prompt_cache_budget();
    scheduler::SchedulerConfig sched;
    bool                       runner_processes = true; // each loaded model in a process of its own
    std::vector<RpcEndpoint>   rpc_endpoints;            // where layers may go besides the CPU
    try {
        HostPort hp = o.host ? parse_host(*o.host) : configured_host();
        if (o.models) models_dir = *o.models;
        cfg.preparation.no_draft = o.no_draft;
        if (o.parallel) sched.num_parallel = parse_parallel(*o.parallel);
        if (auto v = setting("NUM_PARALLEL"); v && !o.parallel) {
            sched.num_parallel = parse_parallel(*v);
        }
        if (auto v = setting("MAX_MEMORY")) sched.memory_budget = parse_byte_size(*v);
        if (auto v = setting("MAX_LOADED_MODELS")) sched.max_loaded_models = std::stoul(*v);
        cfg.host = hp.host;
        cfg.port = hp.port;
        if (models_dir.empty()) models_dir = configured_models_dir();
        if (auto v = setting("ORIGINS")) cfg.origins = *v;
        if (const char * key = std::getenv("SPECD_API_KEY"); key && *key) cfg.api_key = key;
        if (auto v = setting("NO_DRAFT"); v && *v != "0" && *v != "false") cfg.preparation.no_draft = true;
        if (auto v = setting("STRICT_SCHEMA"); v && *v != "0" && *v != "false") cfg.preparation.strict_schema = true;
        if (auto v = setting("MAX_QUEUE")) sched.max_queue = std::stoul(*v);
        if (auto v = setting("UNSEEDED_SAMPLING")) {
            if (*v == "seeded") cfg.preparation.unseeded_rejection = false;
            else if (*v != "rejection") throw std::invalid_argument("UNSEEDED_SAMPLING must be seeded or rejection, not \"" + *v + "\"");
        }
        if (auto v = setting("CONTEXT_LENGTH")) {
            cfg.preparation.default_num_ctx = std::stoi(*v);
            if (cfg.preparation.default_num_ctx < 1 || cfg.preparation.default_num_ctx > prepare::k_max_num_ctx) {
                throw std::invalid_argument("CONTEXT_LENGTH must be between 1 and " + std::to_string(prepare::k_max_num_ctx));
            }
        }
        cfg.limits = connection_limits();
        if (auto v = setting("PROMPT_CACHE")) prompt_cache_bytes = *v == "0" ? 0 : parse_byte_size(*v);
        if (auto v = setting("RUNNERS")) {
            if (*v == "thread") runner_processes = false;
            else if (*v != "process") throw std::invalid_argument("RUNNERS must be process or thread, not \"" + *v + "\"");
        }
        if (auto list = o.rpc ? o.rpc : setting("RPC")) {
            const auto remote    = setting("RPC_ALLOW_REMOTE");
            rpc_endpoints        = parse_rpc_endpoints(*list, remote && *remote != "0" && *remote != "false");
            if (!runner_processes) {
                throw std::invalid_argument("RPC workers need SPECD_RUNNERS=process: ggml's RPC client ends the process "
                                            "that loses a worker, which must be a runner, not the server");
            }
            std::string joined;
            for (const RpcEndpoint & e : rpc_endpoints) joined += (joined.empty() ? "" : ",") + e.text();
            setenv("SPECD_RPC", joined.c_str(), 1); // the runner processes read the same list
        }
        // Checked here, where a bad value is a usage error; every context reads it again.
        const engine::KvCacheType kv = engine::parse_kv_cache_type(setting("KV_CACHE_TYPE"), setting("FLASH_ATTENTION"));
        if (kv.type != GGML_TYPE_F16) std::fprintf(stderr, "specd: KV cache %s\n", kv.name());
        engine::fit_margin_bytes();   // SPECD_GPU_OVERHEAD: a size, or a usage error now
        engine::device_memory_cap();  // SPECD_GPU_MEMORY: the same
        engine::fixed_tensor_split(); // SPECD_TENSOR_SPLIT: proportions, or a usage error now
        sched.default_keep_alive = default_keep_alive();
        // Loaded models may use most of the machine's memory; the rest is left to the system.
        if (sched.memory_budget == 0) sched.memory_budget = scheduler::physical_memory_bytes() / 10 * 9;
    } catch (const std::exception & e) {
        fail(e.what());
        return 2; // a setting that cannot be used, as a usage error
    }

    // Signals are taken by a watcher thread (sigwait), so stopping runs as normal code.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    try {
        // The composition root: the store, the runners (each model in a process of its own,
        // with its own prompt cache; or, with SPECD_RUNNERS=thread, on threads of this one,
        // sharing one prompt cache) and the scheduler that the server serves, destroyed after
        // it (in reverse order).
        models::Store                       store(models_dir);
        process::RunnerProcesses            runners({process::own_executable(), std::make_shared<process::CacheShare>(prompt_cache_bytes)});
        std::unique_ptr<cache::PromptCache> shared_cache;
        if (!runner_processes) shared_cache = std::make_unique<cache::PromptCache>(prompt_cache_bytes, memory::process_ledger());
        scheduler::Scheduler scheduler(sched, shared_cache.get(),
                                       runner_processes ? runners.factory() : scheduler::RunnerFactory{});
        api::Server          server(cfg, {store, scheduler, [&] {
                                          return shared_cache ? shared_cache->stats() : runners.cache_stats();
                                      }});
        server.bind();
        // As Ollama logs its inference compute: this machine's devices, then the RPC workers,
        // asked once now (each load asks again, and leaves out a worker that does not answer).
        for (const engine::DeviceInfo & d : engine::local_devices()) {
            std::fprintf(stderr, "specd: device %s (%s, %s): %.1f GiB free of %.1f GiB\n", d.name.c_str(), d.kind.c_str(),
                         d.description.c_str(), double(d.free_bytes) / 1073741824.0, double(d.total_bytes) / 1073741824.0);
        }
        for (const RpcEndpoint & e : rpc_endpoints) {
            const auto found = engine::probe_rpc_workers({e}, std::chrono::seconds(3));
            if (found.empty()) continue; // probe_rpc_workers said so
            std::fprintf(stderr, "specd: RPC worker %s: %.1f GiB free of %.1f GiB\n", e.text().c_str(),
                         double(found.front().free_bytes) / 1073741824.0, double(found.front().total_bytes) / 1073741824.0);
        }
        std::thread watcher([&] {
            int sig = 0;
            sigwait(&set, &sig);
            std::fprintf(stderr, "specd: signal %d, shutting down\n", sig);
            server.stop();
        });
        server.listen();
        raise(SIGTERM); // wakes the watcher if listening ended some other way
        watcher.join();
    } catch (const std::exception & e) {
        return fail(e.what());
    }
    return 0;
}

} // namespace specd::cli
