#pragma once
// A smaller model that proposes tokens for the target to verify. It has its own context and
// KV cache, kept in step with the target's committed tokens by prefix comparison: whatever
// the target rejected (or shifted away) is removed before the next proposal.
#include "cache/prompt_cache.h"
#include "core/options.h"
#include "engine/context_memory.h"
#include "engine/cpu_threads.h"
#include "engine/kv_sequence.h"
#include "engine/llama_handles.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "spec/drafter.h"

#include <atomic>
#include <memory>
#include <span>
#include <vector>

namespace specd::engine {

class DraftModel final : public spec::Drafter {
  public:
    // Throws specd::Error(bad_request) when the draft's vocabulary differs from the target's.
    DraftModel(std::shared_ptr<Model> draft, const Model & target, uint32_t n_ctx, int32_t n_batch);

    // Per request: how the draft samples (the target's options without penalties: any
    // distribution is exact under verification, only the acceptance rate depends on it),
    // and the flag that cancels it.
    void begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel);

    // Samples under a copy of the request's constraint when there is one: a draft that keeps
    // to the grammar is not cut, and its distribution q is the masked one the target compares
    // with. Above temperature 0 it draws with the request's seeded noise (spec/seeded_draw).
    spec::Proposal propose(const spec::DraftRequest & req) override;

    // Thread counts: timed on this draft's own context (before its first proposal, while it
    // holds nothing), or taken as given. The pools must outlive this draft.
    std::optional<ThreadChoice> measure_threads(ThreadPools & pools, std::span<const int32_t> candidates);
    void                        use_threads(ThreadPools & pools, const ThreadChoice & choice);

    const Model & model() const { return *model_; }
    const ContextBytes & memory() const { return memory_; }

    // The draft context's sequence, for the prompt cache; nullopt when it holds nothing that
    // starts at the beginning of the history (it restarted on a recent window).
    std::optional<cache::SeqState> save_state(size_t max_bytes);
    // Takes a saved sequence back; the next proposal keeps whatever prefix still matches.
    void restore_state(const cache::SeqState & state);

  private:
    bool decode();

    std::shared_ptr<Model>    model_;
    std::unique_ptr<Sampler>  sampler_;
    const std::atomic<bool> * cancel_ = nullptr;
    context_ptr              ctx_;
    ContextBytes             memory_;
    llama_token              filler_ = 0; // stands for image positions (negative pseudo-tokens)
    Batch                    batch_;
    KvSequence               kv_;   // holds history[base_ ...], positions from 0
    size_t                   base_ = 0;
    bool                     first_proposal_ = true;
};

// Empty when two vocabularies are interchangeable for speculation, else the reason.
std::string vocab_mismatch(const Model & target, const Model & draft);

} // namespace specd::engine
