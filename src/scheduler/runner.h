#pragma once
// One model's worker: a bounded FIFO of jobs served one at a time on its own thread, which
// also owns every llama.cpp object of the model (load, generate, unload all happen there).
#include "cache/prompt_cache.h"
#include "memory/ledger.h"
#include "scheduler/job.h"
#include "templates/go_template.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace specd::engine {
class Model;
class Session;
class ChatTemplate;
class Projector;
class Embedder;
} // namespace specd::engine

namespace specd::scheduler {

struct LoadedInfo {
    std::string                                        name;
    std::string                                        digest;
    uint64_t                                           size_bytes = 0;
    uint32_t                                           context_length = 0;
    std::optional<std::chrono::system_clock::time_point> expires_at; // nullopt: never
    std::string                                        family;
    std::string                                        parameter_size;
    std::string                                        quantization_level;
    uint64_t                                           memory_owner = 0; // its owner id in the ledger
};

class Runner {
  public:
    // `cache` (may be null) is shared with the other runners and outlives this one.
    Runner(size_t max_queue, KeepAlive default_keep_alive, cache::PromptCache * cache);
    ~Runner(); // finishes the running job's cancellation and unloads
    Runner(const Runner &)             = delete;
    Runner & operator=(const Runner &) = delete;

    // False when the queue is full.
    bool enqueue(std::shared_ptr<Job> job);

    std::optional<LoadedInfo> loaded() const;

  private:
    void loop();
    void  run(Job & job);
    Event serve(Job & job); // the job's final event (done or error)
    void embed(Job & job, DoneInfo & done); // the request's inputs, on this thread's embedder
    void ensure_loaded(const GenerateRequest & req, const ContextOptions & context, DoneInfo & done);
    void unload();
    void account_model(); // the ledger's view of what the loaded model holds

    const size_t    max_queue_;
    const KeepAlive default_keep_alive_;
    cache::PromptCache * const cache_;

    mutable std::mutex                        mu_;
    std::condition_variable                   cv_;
    std::deque<std::shared_ptr<Job>>         queue_;
    std::shared_ptr<Job>                      current_; // the running job, cancelled on shutdown
    bool                                      stopping_ = false;
    std::optional<std::chrono::steady_clock::time_point> unload_at_;
    std::optional<LoadedInfo>                 info_; // guarded by mu_, read by /api/ps

    // Touched only by the runner thread.
    std::shared_ptr<engine::Model>        model_;
    std::shared_ptr<engine::Model>        draft_;
    std::unique_ptr<engine::ChatTemplate> template_;
    std::unique_ptr<engine::Projector>    projector_; // the model's vision projector, if it has one
    std::optional<templates::GoTemplate>  go_template_; // the model's TEMPLATE, parsed at load
    int32_t                               min_batch_ = 0; // the largest image's tokens on this model
    std::unique_ptr<engine::Session>      session_;
    std::unique_ptr<engine::Embedder>     embedder_; // created by the first embedding request
    std::string                           loaded_digest_;
    uint64_t                              served_ = 0;
    memory::OwnerHandle                   memory_owner_; // open while a model is loaded
    memory::Reservation                   weights_, kv_target_, kv_draft_, compute_, vocab_index_;

    std::thread thread_;
};

} // namespace specd::scheduler
