#include "scheduler/scheduler.h"

#include "engine/devices.h"
#include "engine/layer_placement.h"
#include "memory/ledger.h"
#include "metrics/registry.h"

#include <algorithm>
#include <cstdio>

namespace specd::scheduler {

namespace {

std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1ull << 30));
    return buf;
}

// The bytes one model owner holds on each device off the host.
std::map<std::string, uint64_t> owner_device_bytes(const memory::LedgerSnapshot & ledger, uint64_t owner) {
    std::map<std::string, uint64_t> out;
    for (const auto & r : ledger.reservations) {
        if (!r.device.empty() && r.owner.id == owner) out[r.device] += r.bytes;
    }
    return out;
}

// Whether some offload device has room for `bytes` beside what the other models hold there:
// each of this machine's GPUs within SPECD_GPU_MEMORY or else its total memory less the fit's
// margin; a device only known from the loaded models (an RPC worker's) within SPECD_GPU_MEMORY.
bool fits_a_device(const std::map<std::string, uint64_t> & held, std::optional<uint64_t> cap, uint64_t bytes) {
    bool any = false;
    const auto room = [&](const std::string & name, uint64_t budget) {
        any             = true;
        const auto h    = held.find(name);
        const uint64_t used = h == held.end() ? 0 : h->second;
        return used + bytes <= budget;
    };
    std::map<std::string, bool> local;
    for (ggml_backend_dev_t d : engine::local_offload_devices()) {
        size_t free  = 0;
        size_t total = 0;
        ggml_backend_dev_memory(d, &free, &total);
        const uint64_t margin = engine::fit_margin_bytes();
        const uint64_t budget = cap ? *cap : (total > margin ? total - margin : 0);
        local[ggml_backend_dev_name(d)] = true;
        if (room(ggml_backend_dev_name(d), budget)) return true;
    }
    if (cap) {
        for (const auto & [name, bytes_held] : held) {
            if (!local.count(name) && room(name, *cap)) return true;
        }
    }
    return !any; // nothing to offload to: the host budget decides
}

} // namespace

Scheduler::Scheduler(SchedulerConfig cfg, cache::PromptCache * cache, RunnerFactory make_runner) :
    cfg_(cfg), cache_(cache), make_runner_(std::move(make_runner)) {
    if (!make_runner_) {
        make_runner_ = [](const std::string &, const RunnerConfig & rc) { return std::make_shared<Runner>(rc); };
    }
}

std::shared_ptr<Job> Scheduler::submit(GenerateRequest req, bool streamed) {
    auto job      = std::make_shared<Job>();
    job->request  = std::move(req);
    job->streamed = streamed;
    std::lock_guard lock(mu_);
    if (stopping_) throw Error(ErrorKind::busy, "server is shutting down");
    auto & runner = runners_[job->request.model.name];
    if (!runner) {
        runner = make_runner_(job->request.model.name, RunnerConfig{.max_queue          = cfg_.max_queue,
                                                                    .default_keep_alive = cfg_.default_keep_alive,
                                                                    .cache              = cache_,
                                                                    .num_parallel       = cfg_.num_parallel,
                                                                    .arbiter            = this});
    }
    if (!runner->enqueue(job)) {
        metrics::server_metrics().queue_rejected_total.add();
        throw Error(ErrorKind::busy, "server busy, please try again.  maximum pending requests exceeded");
    }
    return job;
}

std::vector<LoadedInfo> Scheduler::loaded() const {
    std::lock_guard lock(mu_);
    std::vector<LoadedInfo> out;
    for (const auto & [name, runner] : runners_) {
        if (auto info = runner->loaded()) out.push_back(*info);
    }
    return out;
}

uint64_t Scheduler::make_room(const ModelRunner & requester, uint64_t bytes) {
    const uint64_t budget = cfg_.memory_budget > 0 ? cfg_.memory_budget : UINT64_MAX;
    if (bytes > budget) {
        throw bad_request("the model needs about " + gib(bytes) + ", more than the memory budget of " + gib(budget) +
                          " (SPECD_MAX_MEMORY); a smaller num_ctx or num_batch, or fewer parallel sequences, need less");
    }
    const size_t max_loaded = cfg_.max_loaded_models;
    // Each offload device's budget (SPECD_GPU_MEMORY, else a GPU's memory). As Ollama, a model
    // that would fit whole on a device if idle models left it takes their place there.
    const std::optional<uint64_t> device_cap = engine::device_memory_cap();
    for (;;) {
        std::vector<std::shared_ptr<ModelRunner>> idle;
        std::vector<std::shared_ptr<ModelRunner>> idle_on_devices;
        {
            // Loads admitted earlier and still running count as loaded: the decision and the
            // admission are one step under mu_, so two loads never take the same room.
            std::lock_guard lock(mu_);
            if (stopping_) throw Error(ErrorKind::busy, "server is shutting down");
            const memory::LedgerSnapshot ledger = memory::process_ledger().snapshot();
            uint64_t used   = 0;
            size_t   loaded = 0;
            for (const auto & [name, r] : runners_) {
                if (r.get() == &requester) continue;
                const auto pending = loading_.find(r.get());
                if (pending != loading_.end()) {
                    used += std::max(pending->second, r->footprint());
                } else if (const auto info = r->loaded()) {
                    used += r->footprint();
                    if (r->idle()) {
                        idle.push_back(r);
                        if (!owner_device_bytes(ledger, info->memory_owner).empty()) idle_on_devices.push_back(r);
                    }
                } else {
                    continue;
                }
                ++loaded;
            }
            const bool fits_memory = used + bytes <= budget;
            const bool fits_count  = max_loaded == 0 || loaded < max_loaded;
            const bool fits_device = idle_on_devices.empty() ||
                                     fits_a_device(held_by_others(ledger, requester), device_cap, bytes);
            if (fits_memory && fits_count && fits_device) {
                loading_[&requester] = bytes;
                return budget - used;
            }
            if (fits_memory && fits_count) idle = std::move(idle_on_devices); // room on a device is what is missing
            if (idle.empty()) {
                if (!fits_count) {
                    throw Error(ErrorKind::busy, "server busy: " + std::to_string(loaded) +
                                                     " models are loaded or loading (SPECD_MAX_LOADED_MODELS is " +
                                                     std::to_string(max_loaded) + ") and every one is in use");
                }
                throw Error(ErrorKind::busy, "server busy: the model needs about " + gib(bytes) + " and " +
                                                 gib(budget - std::min(budget, used)) + " of the " + gib(budget) +
                                                 " budget are free, while every other loaded model is in use");
            }
        }
        // The least recently used idle model goes first. It unloads on its own thread; if it
        // took work meanwhile, the next round looks again.
        const auto lru = std::min_element(idle.begin(), idle.end(), [](const auto & a, const auto & b) {
            return a->last_used_ns() < b->last_used_ns();
        });
        if ((*lru)->unload_if_idle()) metrics::server_metrics().model_evictions_total.add();
    }
}

std::map<std::string, uint64_t> Scheduler::held_by_others(const memory::LedgerSnapshot & ledger,
                                                           const ModelRunner &           requester) const {
    const auto                      own = requester.loaded();
    std::map<std::string, uint64_t> out;
    for (const auto & r : ledger.reservations) {
        if (!r.device.empty() && !(own && r.owner.id == own->memory_owner)) out[r.device] += r.bytes;
    }
    return out;
}

std::map<std::string, uint64_t> Scheduler::device_held(const ModelRunner & requester) {
    return held_by_others(memory::process_ledger().snapshot(), requester);
}

void Scheduler::end_load(const ModelRunner & requester) {
    std::lock_guard lock(mu_);
    loading_.erase(&requester);
}

void Scheduler::shutdown() {
    std::map<std::string, std::shared_ptr<ModelRunner>> runners;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        runners.swap(runners_);
    }
    runners.clear(); // each runner cancels its queue and unloads in its destructor
}

} // namespace specd::scheduler
