#pragma once
// One sequence of a draft head (engine/head_context): what it proposes for one of the
// session's sequences. The head's input is the token it continues and the target's hidden
// state that chose that token, so after every target decode the sequence takes that row
// (take_row); its drafts then run on the head alone, each step's own hidden state feeding
// the next. The head keeps no KV of its own (it reads the target's), so a sequence holds one
// row and nothing else: the prompt cache restores the target's state, and the prompt's last
// token, which is always decoded again, gives the row back.
//
// The sequences that draft in one step propose together: one head decode per draft position
// for all of them.
#include "core/options.h"
#include "engine/head_context.h"
#include "engine/kv_sequence.h"
#include "engine/sampler.h"
#include "spec/drafter.h"

#include <atomic>
#include <memory>
#include <span>
#include <vector>

namespace specd::engine {

class HeadDraft;

// One sequence's part of a proposal made together: what it is asked for, and its answer.
struct HeadJob {
    HeadDraft *        head = nullptr;
    spec::DraftRequest req;
    spec::Proposal     out;
};

class HeadDraft {
  public:
    // Sequence `seq` of `ctx` (the target's sequence of the same id).
    HeadDraft(std::shared_ptr<HeadContext> ctx, llama_seq_id seq);

    // Per request: how the head samples (the target's options without penalties) and the
    // flag that cancels it. Forgets the row of an earlier request.
    void begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel);

    // After a decode of the target (`target_ctx`): the hidden state at batch index `idx` chose
    // the token that follows what `kv` now holds.
    void take_row(llama_context * target_ctx, int32_t idx, const KvSequence & kv);

    // Up to each job's `req.k` tokens continuing its `req.history`: the tokens after the row
    // (the last committed one, then any forced ones) are read first, then one decode per
    // draft position for every job. No row for the history (the sequence was not decoded
    // since, or the context shifted) is an empty proposal, as are a cancelled request and a
    // failed decode. Each job samples under a copy of its constraint when it has one, with the
    // request's seeded noise above temperature 0 (spec/seeded_draw).
    static void propose_together(std::span<HeadJob> jobs);

    DraftKind kind() const { return ctx_->kind(); }

  private:
    bool cancelled() const { return cancel_ && cancel_->load(); }

    std::shared_ptr<HeadContext> ctx_;
    llama_seq_id                 seq_;
    std::unique_ptr<Sampler>     sampler_;
    const std::atomic<bool> *    cancel_ = nullptr;
    std::vector<float>           row_;        // the target's hidden state that chose history[row_at_]
    size_t                       row_at_ = 0;
    llama_pos                    pos_    = 0; // where the target's next token goes
    bool                         has_row_ = false;
};

} // namespace specd::engine
