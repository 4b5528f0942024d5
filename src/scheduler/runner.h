#pragma once
// One model's worker: a bounded FIFO of jobs, served on its own thread, which also owns every
// llama.cpp object of the model (load, generate, unload all happen there). Up to the model's
// parallel sequences run at once: each step decodes one batch for all of them, and queued
// jobs join between steps in arrival order.
#include "cache/prompt_cache.h"
#include "engine/live_counters.h"
#include "scheduler/job.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace specd::scheduler {

class Runner;
class ModelInstance;

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
    virtual uint64_t make_room(const Runner & requester, uint64_t bytes) = 0;
    // The load admitted by make_room has ended: the model is loaded (and counts as such) or
    // failed. Harmless when none was admitted.
    virtual void end_load(const Runner & requester) = 0;
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
    // Its work: sequences generating and jobs waiting, and what its requests did so far
    // (refreshed while they run, a few times a second, and at each request's end).
    int                                                running = 0;
    size_t                                             queued  = 0;
    engine::LiveCounters                               live;
};

struct RunnerConfig {
    size_t               max_queue = 512;
    KeepAlive            default_keep_alive = std::chrono::minutes(5);
    cache::PromptCache * cache        = nullptr; // shared with the other runners; may be null
    int                  num_parallel = 0;       // 0: chosen from the memory budget at load
    LoadArbiter *        arbiter      = nullptr; // null: no memory budget
};

class Runner {
  public:
    explicit Runner(RunnerConfig cfg);
    ~Runner(); // cancels queued and running jobs, and unloads
    Runner(const Runner &)             = delete;
    Runner & operator=(const Runner &) = delete;

    // False when the queue is full.
    bool enqueue(std::shared_ptr<Job> job);

    std::optional<LoadedInfo> loaded() const;

    // For the scheduler's memory budget: the bytes the loaded model holds (0 when none),
    // whether it has no work (running or queued), and when it last finished a job.
    uint64_t footprint() const;
    bool     idle() const;
    int64_t  last_used_ns() const { return last_used_ns_.load(); }
    // Unloads the model on the runner's thread if it is idle, and waits for it; false when
    // the runner had work (or nothing loaded).
    bool     unload_if_idle();

  private:
    struct Active; // a generation running on one of the session's sequences

    void loop();
    // Starts the job, or answers it at once (load, embed, errors). False when it has to wait
    // for the running generations to end (another context, no free sequence).
    bool  admit(const std::shared_ptr<Job> & job);
    void  step(); // one batched decode; answers the jobs that ended
    // Releases what the job held, then sends its final event (so a client that has its
    // answer already sees the memory back in the ledger).
    void  finish(Active & a, Event last);
    void  apply_keep_alive(const Job & job);
    // The model (model_instance.h) as the request needs it, and /api/ps's view of it.
    void  ensure_loaded(const GenerateRequest & req, const ContextOptions & context, DoneInfo & done);
    void  unload();
    void  forget_loaded(); // what the runner itself knew of the unloaded model
    void  publish_live(int running); // info_'s running count and live counters

    const RunnerConfig cfg_;

    mutable std::mutex                        mu_;
    std::condition_variable                   cv_;
    std::condition_variable                   unloaded_cv_;
    std::deque<std::shared_ptr<Job>>          queue_;
    std::vector<std::shared_ptr<Job>>         running_; // cancelled on shutdown
    bool                                      stopping_ = false;
    bool                                      busy_     = false; // a job is being started or runs
    bool                                      unload_requested_ = false;
    std::optional<std::chrono::steady_clock::time_point> unload_at_;
    std::optional<LoadedInfo>                 info_; // guarded by mu_, read by /api/ps
    std::atomic<int64_t>                      last_used_ns_{0};

    // Touched only by the runner thread (model_->footprint() excepted: any thread reads it).
    std::vector<std::unique_ptr<Active>> active_;
    bool                                 unload_when_idle_ = false; // a job asked for keep_alive 0
    uint64_t                             served_           = 0;
    int64_t                              published_ns_     = 0;
    std::unique_ptr<ModelInstance>       model_;

    std::thread thread_;
};

} // namespace specd::scheduler
