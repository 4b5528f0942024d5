#pragma once
// One model's worker: a bounded FIFO of jobs, served on its own thread, which also owns every
// llama.cpp object of the model (load, generate, unload all happen there). Up to the model's
// parallel sequences run at once: each step decodes one batch for all of them, and queued
// jobs join between steps in arrival order.
#include "scheduler/job.h"
#include "scheduler/model_runner.h"

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

class ModelInstance;

class Runner final : public ModelRunner {
  public:
    explicit Runner(RunnerConfig cfg);
    ~Runner() override; // cancels queued and running jobs, and unloads
    Runner(const Runner &)             = delete;
    Runner & operator=(const Runner &) = delete;

    bool                      enqueue(std::shared_ptr<Job> job) override;
    std::optional<LoadedInfo> loaded() const override;
    uint64_t                  footprint() const override;
    bool                      idle() const override;
    int64_t                   last_used_ns() const override { return last_used_ns_.load(); }
    bool                      unload_if_idle() override; // on the runner's thread, waited for

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
