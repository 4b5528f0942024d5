#pragma once
// What the scheduler needs of a model's runner, wherever the runner runs: on a thread of this
// process (runner.h), or in a child process of its own (process/runner_process.h), so that an
// abort inside llama.cpp ends one runner and never the server. The types here are what
// crosses that boundary besides the job itself (job.h).
#include "engine/live_counters.h"
#include "scheduler/job.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace specd::cache {
class PromptCache;
}

namespace specd::scheduler {

class ModelRunner;

// What a runner asks of the scheduler before it loads a model.
class LoadArbiter {
  public:
    virtual ~LoadArbiter() = default;
    // Makes room for `bytes` more (unloading idle models, least recently used first) and
    // returns how many bytes of the budget are free for `requester` once it has. From then
    // until end_load(requester), the load counts as a loaded model of `bytes`, so that loads
    // admitted together stay within the limits. Throws specd::Error when it cannot:
    // bad_request when the model alone is over the budget, busy when the models that would
    // have to go are in use (or still loading).
    virtual uint64_t make_room(const ModelRunner & requester, uint64_t bytes) = 0;
    // The load admitted by make_room has ended: the model is loaded (and counts as such) or
    // failed. Harmless when none was admitted.
    virtual void end_load(const ModelRunner & requester) = 0;
    // The bytes the other loaded models hold on each offload device, by ggml's device name, as
    // of the last make_room: under a device budget (SPECD_GPU_MEMORY) the fit places a new
    // model in what they leave.
    virtual std::map<std::string, uint64_t> device_held(const ModelRunner & requester) = 0;
};

struct LoadedInfo {
    std::string                                        name;
    std::string                                        digest;
    uint64_t                                           size_bytes = 0;
    uint32_t                                           context_length = 0;
    int                                                parallel = 1; // sequences decoded together
    std::optional<std::chrono::system_clock::time_point> expires_at; // nullopt: never
    std::string                                        family;
    std::string                                        parameter_size;
    std::string                                        quantization_level;
    uint64_t                                           memory_owner = 0; // its owner id in the ledger
    // CPU threads (measured at load unless num_thread set them): one-token steps, batches,
    // and the draft model's one-token steps (0: no draft model).
    int32_t                                            threads = 0;
    int32_t                                            threads_batch = 0;
    int32_t                                            draft_threads = 0;
    std::string                                        kv_cache_type = "f16"; // its KV cache's element type
    // Its work: sequences generating and jobs waiting, and what its requests did so far
    // (refreshed while they run, a few times a second, and at each request's end).
    int                                                running = 0;
    size_t                                             queued  = 0;
    engine::LiveCounters                               live;
};

struct RunnerConfig {
    size_t               max_queue = 512;
    KeepAlive            default_keep_alive = std::chrono::minutes(5);
    cache::PromptCache * cache        = nullptr; // shared with the other runners of this process; may be null
    int                  num_parallel = 0;       // 0: chosen from the memory budget at load
    LoadArbiter *        arbiter      = nullptr; // null: no memory budget
};

class ModelRunner {
  public:
    virtual ~ModelRunner() = default;

    // Queues the job; false when the queue is full.
    virtual bool enqueue(std::shared_ptr<Job> job) = 0;
    // What /api/ps shows of the loaded model; nullopt when none is.
    virtual std::optional<LoadedInfo> loaded() const = 0;
    // For the scheduler's memory budget: the bytes the loaded model holds (0 when none),
    // whether it has no work (running or queued), and when it last finished a job.
    virtual uint64_t footprint() const = 0;
    virtual bool     idle() const = 0;
    virtual int64_t  last_used_ns() const = 0;
    // Unloads the model if the runner is idle, and waits for it; false when the runner had
    // work (or nothing loaded).
    virtual bool unload_if_idle() = 0;
};

// Makes the runner for one model name (the scheduler makes one per name, on first use).
using RunnerFactory = std::function<std::shared_ptr<ModelRunner>(const std::string & model, const RunnerConfig & cfg)>;

} // namespace specd::scheduler
