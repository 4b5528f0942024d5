#pragma once
// Routes requests to per-model runners (created on first use), and reports what is loaded.
#include "scheduler/runner.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace specd::scheduler {

struct SchedulerConfig {
    size_t    max_queue          = 512;                 // per model, Ollama's default
    KeepAlive default_keep_alive = std::chrono::minutes(5);
};

class Scheduler {
  public:
    // `cache` (may be null) outlives the scheduler.
    Scheduler(SchedulerConfig cfg, cache::PromptCache * cache) : cfg_(cfg), cache_(cache) {}

    // Queues the job on its model's runner; throws specd::Error(busy) when the queue is full.
    std::shared_ptr<Job> submit(GenerateRequest req);

    std::vector<LoadedInfo> loaded() const;

    // Cancels queued work and unloads every model (server shutdown).
    void shutdown();

  private:
    SchedulerConfig                                cfg_;
    cache::PromptCache *                           cache_;
    mutable std::mutex                             mu_;
    std::map<std::string, std::unique_ptr<Runner>> runners_; // by model name
    bool                                           stopping_ = false;
};

} // namespace specd::scheduler
