#pragma once
// One sequence of the draft model: what it proposes for one of the session's sequences. Its
// KV sequence lives in the draft's shared context (engine/draft_context) and is kept in step
// with the target's committed tokens by prefix comparison: whatever the target rejected (or
// shifted away) is removed before the next proposal. The sequences that draft in one step
// propose together (propose_together): one decode per draft position for all of them.
#include "cache/prompt_cache.h"
#include "core/options.h"
#include "engine/companion_state.h"
#include "engine/cpu_threads.h"
#include "engine/draft_context.h"
#include "engine/kv_sequence.h"
#include "engine/sampler.h"
#include "spec/drafter.h"

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace specd::engine {

class DraftModel;

// One sequence's part of a proposal made together: what it is asked for, and its answer.
struct DraftJob {
    DraftModel *       draft = nullptr;
    spec::DraftRequest req;
    spec::Proposal     out;
};

class DraftModel : public CompanionState {
  public:
    // Sequence `seq` of `ctx` (one of the n_seq it was made for), one DraftModel per sequence.
    DraftModel(std::shared_ptr<DraftContext> ctx, llama_seq_id seq);

    // Per request: how the draft samples (the target's options without penalties: any
    // distribution is exact under verification, only the acceptance rate depends on it),
    // and the flag that cancels it.
    void begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel);

    // Thread counts: timed on this sequence (before its first proposal, while it holds
    // nothing). The pools must outlive the draft's context.
    std::optional<ThreadChoice> measure_threads(ThreadPools & pools, std::span<const int32_t> candidates);

    const Model & model() const { return ctx_->model(); }

    // The sequence, for the prompt cache; nullopt when it holds nothing that starts at the
    // beginning of the history (it restarted on a recent window).
    std::optional<cache::SeqState> save_state(const KvSequence & kv, size_t max_bytes) override;
    // Takes a saved sequence back; the next proposal keeps whatever prefix still matches.
    void restore_state(const cache::SeqState & state) override;

    // Up to each job's `req.k` tokens continuing its `req.history`, for jobs whose drafts
    // share one context: first the tokens each sequence has not seen yet, then one decode per
    // draft position for all of them. Fewer tokens or none is a valid answer (an
    // end-of-generation token, a cancelled request, a failed decode). Each job samples under a
    // copy of its constraint when it has one: a draft that keeps to the grammar is not cut, and
    // its distribution q is the masked one the target compares with. Above temperature 0 it
    // draws with the request's seeded noise (spec/seeded_draw).
    static void propose_together(std::span<DraftJob> jobs);

  private:
    // The tokens of `history` this sequence must still decode, its last token always among
    // them (its logits give the first draft); drops what no longer matches.
    std::vector<llama_token> catch_up(std::span<const spec::token_id> history);
    // Draws the next draft from the logits at batch index `idx` into `out`; true when the
    // draft goes on (the token was appended to `pending`, to be decoded next).
    bool draw(int32_t idx, const spec::DraftRequest & req, spec::Proposal & out, std::vector<llama_token> & pending);
    bool cancelled() const { return cancel_ && cancel_->load(); }
    void reset();

    std::shared_ptr<DraftContext> ctx_;
    std::unique_ptr<Sampler>      sampler_;
    const std::atomic<bool> *     cancel_ = nullptr;
    KvSequence                    kv_; // holds history[base_ ...], positions from 0
    size_t                        base_           = 0;
    bool                          first_proposal_ = true;
};

} // namespace specd::engine
