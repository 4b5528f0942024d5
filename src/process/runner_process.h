#pragma once
// A model's runner in a child process of its own (the server's side of it): the scheduler
// sees a ModelRunner like any other, while the model's llama.cpp objects live in the child,
// so that an abort inside llama.cpp (a GGML_ASSERT in a projector, a CUDA error, a lost RPC
// worker) ends that child and never the server.
//
// The child is started on the first job and ends when its model unloads (so its memory goes
// back to the system). When it dies unexpectedly, every job it had started ends with an error
// that names how it ended and its last log line; jobs still queued go to a fresh child. A
// child that dies twice in a row while loading (or starting) marks the model failed: its
// requests are answered with that error until the model is created again (another digest) or
// the server restarts. docs/process.md has the protocol.
#include "memory/prompt_cache_stats.h"
#include "process/child_process.h"
#include "process/ledger_mirror.h"
#include "scheduler/model_runner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace specd::process {

// The server's prompt-cache budget, shared by the runners that run: each runner's cache gets
// an equal share, which changes as runners start and end (SPECD_PROMPT_CACHE stays the
// server's total, as when one cache served every model).
class CacheShare {
  public:
    explicit CacheShare(size_t total_bytes) : total_(total_bytes) {}
    size_t total() const { return total_; }
    size_t share() const { return total_ / size_t(std::max(1, running_.load())); }
    void   started() { ++running_; }
    void   ended() { --running_; }

  private:
    const size_t     total_;
    std::atomic<int> running_{0};
};

struct RunnerProcessSettings {
    std::filesystem::path       exe;   // this executable, run as `exe runner --fd 3`
    std::shared_ptr<CacheShare> cache; // the prompt cache's budget
};

class RunnerProcess final : public scheduler::ModelRunner {
  public:
    RunnerProcess(std::string model, scheduler::RunnerConfig cfg, RunnerProcessSettings settings);
    ~RunnerProcess() override; // its jobs end (with "server is shutting down"), its child exits

    bool                                 enqueue(std::shared_ptr<scheduler::Job> job) override;
    std::optional<scheduler::LoadedInfo> loaded() const override;
    uint64_t                             footprint() const override { return footprint_.load(); }
    bool                                 idle() const override;
    int64_t                              last_used_ns() const override { return last_used_ns_.load(); }
    bool                                 unload_if_idle() override;

    // Its prompt cache's counters: the running child's, plus what earlier children counted.
    memory::PromptCacheStats cache_stats() const;

  private:
    struct Pending {
        std::shared_ptr<scheduler::Job> job;
        bool                            started     = false; // the child began serving it
        bool                            cancel_sent = false;
    };
    struct Child;

    void ensure_child(std::unique_lock<std::mutex> & lock);
    void send_job(Child & c, uint64_t id, const scheduler::Job & job);
    void read_frames(Child & c);
    void read_log(Child & c);
    void dispatch(Child & c, const nlohmann::json & head, const std::vector<std::string> & blobs);
    void apply_state(Child & c, const nlohmann::json & head);
    void answer_make_room(Child & c, const nlohmann::json & head);
    void supervise();
    void on_death(std::unique_lock<std::mutex> & lock);
    // Stops the current child (stop, then a wait, then SIGKILL) and forgets its state.
    void stop_child(std::unique_lock<std::mutex> & lock);
    // A child ended (either way): its counters kept, its state forgotten (under mu_).
    void retire(const Child & c);
    void fail_jobs(const std::string & message, ErrorKind kind, bool started_only);

    const std::string              model_;
    const scheduler::RunnerConfig  cfg_;
    const RunnerProcessSettings    settings_;

    mutable std::mutex                   mu_;
    std::condition_variable              cv_;          // supervisor wake-ups, unload answers
    std::unique_ptr<Child>               child_;       // the running child, if any
    std::map<uint64_t, Pending>          jobs_;        // by id, sent and not yet answered in full
    uint64_t                             next_id_  = 0;
    uint64_t                             next_rid_ = 0;
    uint64_t                             spawns_   = 0;
    std::map<uint64_t, bool>             unload_answers_;
    std::optional<scheduler::LoadedInfo> info_;
    int                                  load_deaths_ = 0; // in a row
    std::optional<std::pair<std::string, std::string>> failed_; // digest, message
    memory::PromptCacheStats             cache_live_{}, cache_ended_{};
    LedgerMirror                         mirror_;
    bool                                 stopping_ = false;

    std::atomic<uint64_t> footprint_{0};
    std::atomic<int64_t>  last_used_ns_{0};
    std::thread           supervisor_;
};

// The runners of a server, as the composition root makes them (scheduler::RunnerFactory),
// and the sum of their prompt caches for the reports.
class RunnerProcesses {
  public:
    explicit RunnerProcesses(RunnerProcessSettings settings) : settings_(std::move(settings)) {}

    scheduler::RunnerFactory factory();
    memory::PromptCacheStats cache_stats() const;

  private:
    RunnerProcessSettings                     settings_;
    mutable std::mutex                        mu_;
    std::vector<std::weak_ptr<RunnerProcess>> runners_;
};

} // namespace specd::process
