#pragma once
// Routes requests to per-model runners (created on first use), reports what is loaded, and
// keeps the loaded models within a memory budget: a model that needs room unloads the least
// recently used idle ones.
#include "engine/session.h"
#include "memory/ledger.h"
#include "scheduler/runner.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specd::scheduler {

// The most sequences one model may decode at once (--parallel, NUM_PARALLEL).
inline constexpr int k_max_parallel = engine::Session::k_max_parallel;

struct SchedulerConfig {
    size_t    max_queue          = 512;                 // per model, Ollama's default
    KeepAlive default_keep_alive = std::chrono::minutes(5);
    int       num_parallel       = 0;                   // sequences per model; 0: from the budget
    uint64_t  memory_budget      = 0;                   // bytes for loaded models; 0: no limit
    size_t    max_loaded_models  = 3;                   // Ollama's default on a CPU machine
};

class Scheduler final : private LoadArbiter {
  public:
    // `cache` (may be null) outlives the scheduler. `make_runner` makes each model's runner;
    // unset: a Runner on a thread of this process.
    Scheduler(SchedulerConfig cfg, cache::PromptCache * cache, RunnerFactory make_runner = {});
    ~Scheduler() override { shutdown(); }

    // Queues the job on its model's runner; throws specd::Error(busy) when the queue is full.
    // `streamed`: whether the client reads the answer piece by piece (Job::streamed).
    std::shared_ptr<Job> submit(GenerateRequest req, bool streamed = true);

    std::vector<LoadedInfo> loaded() const;

    // Cancels queued work and unloads every model (server shutdown).
    void shutdown();

  private:
    uint64_t make_room(const ModelRunner & requester, uint64_t bytes) override;
    void     end_load(const ModelRunner & requester) override;
    std::map<std::string, uint64_t> device_held(const ModelRunner & requester) override;

    // What every model but the requester holds on each device (ledger reservations off the host).
    std::map<std::string, uint64_t> held_by_others(const memory::LedgerSnapshot & ledger, const ModelRunner & requester) const;

    SchedulerConfig                                cfg_;
    cache::PromptCache *                                cache_;
    RunnerFactory                                       make_runner_;
    mutable std::mutex                                  mu_;
    std::map<std::string, std::shared_ptr<ModelRunner>> runners_; // by model name
    std::map<const ModelRunner *, uint64_t>             loading_; // loads admitted by make_room and not ended: their bytes
    bool                                           stopping_ = false;
};

} // namespace specd::scheduler
