#pragma once
// The model a runner serves, from load to unload: its weights (with its draft and vision
// projector), its templates, the session that decodes its requests, the embedder, and what
// they hold in the memory ledger. The runner (runner.h) keeps the queue, the thread and the
// requests in flight; it calls this only from its own thread. footprint() may be read from
// any thread.
#include "core/request.h"
#include "engine/live_counters.h"
#include "memory/ledger.h"
#include "scheduler/job.h"
#include "scheduler/runner.h"
#include "templates/go_template.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace specd::engine {
class Model;
class Session;
class ChatTemplate;
class Projector;
class Embedder;
struct MultimodalPrompt;
} // namespace specd::engine

namespace specd::scheduler {

class ModelInstance {
  public:
    // `runner` is who the memory budget's arbiter sees asking for room.
    ModelInstance(const RunnerConfig & cfg, const ModelRunner & runner);
    ~ModelInstance();
    ModelInstance(const ModelInstance &)             = delete;
    ModelInstance & operator=(const ModelInstance &) = delete;

    // Whether the request's model is loaded with these load options (the session may still
    // differ), and whether serving it with `context` needs a load (another model or context).
    bool has_model(const GenerateRequest & req, const ContextOptions & context) const;
    bool needs_load(const GenerateRequest & req, const ContextOptions & context) const;

    // Loads what the request needs with `context` unless it is loaded so already (another
    // model is unloaded first; room is made within the memory budget), adding the time to
    // `done.load_ns`. Returns what /api/ps shows of a new load, nullopt when nothing changed.
    std::optional<LoadedInfo> ensure_loaded(const GenerateRequest & req, const ContextOptions & context,
                                            DoneInfo & done);
    void unload();
    bool loaded() const { return model_ != nullptr; }
    // Loaded weights, no session yet: a load that failed half way.
    bool half_loaded() const { return model_ && !session_; }

    // The request's prompt as tokens and images, rendered by its template (the request's, the
    // model's TEMPLATE, or the GGUF's), tokenized only at the ends truncation keeps.
    engine::MultimodalPrompt build_prompt(const GenerateRequest & req, const std::atomic<bool> & cancel) const;
    // The request's inputs, on this model's embedder (made by the first embedding request).
    void embed(Job & job, DoneInfo & done);

    engine::Session & session() { return *session_; }
    bool              has_session() const { return session_ != nullptr; }
    // The largest image's tokens seen on this model: batches are at least this large.
    int32_t min_batch() const { return min_batch_; }
    void    grow_min_batch(int32_t n_tokens) { min_batch_ = std::max(min_batch_, n_tokens); }

    // What its requests did so far, over every session on the loaded model.
    engine::LiveCounters live() const;
    // The ledger's view of what the loaded model holds, refreshed.
    void     account();
    uint64_t footprint() const { return footprint_.load(); }
    // Its bytes on other devices than the host (RPC workers), which footprint() leaves out.
    uint64_t offloaded_bytes() const { return offloaded_bytes_.load(); }

  private:
    const RunnerConfig & cfg_;
    const ModelRunner &  runner_;

    int                                   n_seq_ = 1; // sequences of the loaded model's sessions
    std::shared_ptr<engine::Model>        model_;
    std::shared_ptr<engine::Model>        draft_;
    std::unique_ptr<engine::ChatTemplate> template_;
    std::unique_ptr<engine::Projector>    projector_;   // the model's vision projector, if it has one
    std::optional<templates::GoTemplate>  go_template_; // the model's TEMPLATE, parsed at load
    int32_t                               min_batch_ = 0;
    std::unique_ptr<engine::Session>      session_;
    std::unique_ptr<engine::Embedder>     embedder_;           // created by the first embedding request
    uint64_t                              embedder_bytes_ = 0; // its estimate, for the session's num_ctx
    std::string                           loaded_digest_;
    engine::LiveCounters                  live_base_; // earlier sessions' counts on the loaded model
    memory::OwnerHandle                   memory_owner_; // open while a model is loaded
    memory::Reservation                   weights_, kv_target_, kv_draft_, compute_, vocab_index_;
    // Bytes on other devices, by (device, bucket).
    std::map<std::pair<std::string, memory::Bucket>, memory::Reservation> offloaded_;
    std::atomic<uint64_t>                 footprint_{0};
    std::atomic<uint64_t>                 offloaded_bytes_{0};
};

} // namespace specd::scheduler
