#include "scheduler/scheduler.h"

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
    for (;;) {
        std::vector<std::shared_ptr<ModelRunner>> idle;
        {
            // Loads admitted earlier and still running count as loaded: the decision and the
            // admission are one step under mu_, so two loads never take the same room.
            std::lock_guard lock(mu_);
            if (stopping_) throw Error(ErrorKind::busy, "server is shutting down");
            uint64_t used   = 0;
            size_t   loaded = 0;
            for (const auto & [name, r] : runners_) {
                if (r.get() == &requester) continue;
                const auto pending = loading_.find(r.get());
                if (pending != loading_.end()) {
                    used += std::max(pending->second, r->footprint());
                } else if (r->loaded()) {
                    used += r->footprint();
                    if (r->idle()) idle.push_back(r);
                } else {
                    continue;
                }
                ++loaded;
            }
            const bool fits_memory = used + bytes <= budget;
            const bool fits_count  = max_loaded == 0 || loaded < max_loaded;
            if (fits_memory && fits_count) {
                loading_[&requester] = bytes;
                return budget - used;
            }
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
