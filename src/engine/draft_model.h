#pragma once
// A smaller model that proposes tokens for the target to verify. It has its own context and
// KV cache, kept in step with the target's committed tokens by prefix comparison: whatever
// the target rejected (or shifted away) is removed before the next proposal.
#include "core/options.h"
#include "engine/llama_handles.h"
#include "engine/model.h"
#include "engine/sampler.h"

#include <atomic>
#include <memory>
#include <span>
#include <vector>

namespace specd::engine {

struct Proposal {
    std::vector<llama_token>     tokens;
    std::vector<spec::TokenDist> dists; // the distribution each token was drawn from
};

class DraftModel {
  public:
    // Throws specd::Error(bad_request) when the draft's vocabulary differs from the target's.
    DraftModel(std::shared_ptr<Model> draft, const Model & target, uint32_t n_ctx, int32_t n_batch);

    // Up to `k` tokens continuing `history` (every committed token, the last one included).
    Proposal propose(std::span<const llama_token> history, int k, Sampler & sampler, spec::Rng & rng,
                     const std::atomic<bool> & cancel);

    const Model & model() const { return *model_; }

  private:
    bool decode(const std::atomic<bool> & cancel);

    std::shared_ptr<Model>   model_;
    context_ptr              ctx_;
    Batch                    batch_;
    std::vector<llama_token> cached_; // tokens whose KV is in the draft's sequence 0
};

// Empty when two vocabularies are interchangeable for speculation, else the reason.
std::string vocab_mismatch(const Model & target, const Model & draft);

} // namespace specd::engine
