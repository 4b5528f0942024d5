#pragma once
// One request on one of a session's sequences: its prompt is read in chunks (the prefix its
// sequence or the prompt cache already holds is reused), then each round plans forced text
// and drafts after the last token, and verifies them from the step's batch (engine/round).
// The session decides what goes into each step's batch and decodes it; the run fills in its
// part and reads its logits back.
#include "core/options.h"
#include "engine/forced_speller.h"
#include "engine/generate_result.h"
#include "engine/generation_output.h"
#include "engine/live_counters.h"
#include "engine/llama_handles.h"
#include "engine/model.h"
#include "engine/projector.h"
#include "engine/prompt_reuse.h"
#include "engine/round.h"
#include "engine/sampler.h"
#include "engine/sequence_slot.h"
#include "spec/depth_controller.h"

#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

namespace specd::engine {

// The deepest speculation round (the depth controller's k_max).
constexpr int k_spec_max = 16;


class RequestRun;

// What a run uses of its session; the session owns it and outlives its runs.
struct RunEnv {
    llama_context *    ctx;
    const Model &      model;
    Batch &            batch;
    uint32_t           n_ctx;     // per sequence
    int32_t            num_batch; // the most prompt tokens one step takes from a run
    ForcedSpeller &    speller;   // learns how the target spells forced text
    spec::DepthPrior & prior;     // what the depth controller carries between requests
    spec::AcceptancePool & acceptance; // what the running requests' drafts met, pooled
    const spec::StepCosts & steps;     // what the session's steps cost by their positions
    LiveCounters &     live;      // what the session's requests did so far, round by round
    PromptReuse &      reuse;
    // Evaluates one of the run's images into its sequence, on decodes of its own.
    std::function<Projector::EvalTimes(RequestRun &, const MultimodalPrompt &, const ImageSpan &)> eval_image;
};

class RequestRun {
  public:
    RequestRun(const RunEnv & env, SequenceSlot & slot, uint64_t id, MultimodalPrompt prompt, GenerateOptions opts,
               TextSink emit, LogprobSink emit_logprobs, const std::atomic<bool> & cancel);

    const uint64_t            id;
    SequenceSlot &            slot;
    const std::atomic<bool> & cancel;
    std::exception_ptr        error;

    bool prefilling() const { return phase_ == Phase::prefill; }
    bool ended() const { return phase_ == Phase::ended || error; }

    // Adds up to `room` prompt tokens to the batch (images are evaluated on their own, right
    // away); true when it added any.
    bool add_prefill(int32_t room);
    // Opens this round (forced text, depth, prompt lookup's drafts) within `room` positions
    // of the step's batch, with forced text only when `may_draft` is false (the session's
    // DraftingGate); false when the answer ended before the round (the context is full and
    // cannot shift). Then the positions it may add, at most.
    // `batch_depth`: the depth the session chose for every round of the step
    // (spec/batch_depth.h); a round with forced text ahead plans its own.
    bool open_round(int32_t room, bool may_draft = true, std::optional<int> batch_depth = std::nullopt);
    // Whether the round open or just decoded verifies drafts (forced text aside).
    bool round_has_drafts() const { return plan_.n_drafted() > 0; }
    // Whether the drafting gate's answer changes this request's rounds: it may draft (it did
    // not ask for none) at the controller's depth (a fixed depth is not held back).
    bool gated() const { return opts_.draft_num_predict != 0 && !opts_.draft_fixed_k.has_value(); }
    // The open round's depth, and whether forced text is ahead of its drafts.
    int  round_depth() const { return plan_.k; }
    bool round_forced() const { return plan_.n_forced > 0; }
    // What the depth controller expects of a round by its depth (empty: this request does not
    // take part in the session's choice: a fixed depth, or drafting off), and its cost model.
    std::vector<double> expected_tokens() const { return depth_.expected_tokens(); }
    spec::DepthCosts    depth_costs() const { return depth_.costs(); }
    int32_t round_positions() const { return 1 + static_cast<int32_t>(plan_.tokens.size()) + std::max(plan_.k, 0); }
    // What the open round asks of the draft model (the session asks for every run's at once).
    std::optional<spec::DraftRequest> draft_request() const;
    // Closes the round with the draft model's answer (empty: none asked) and its share of the
    // draft time (nullopt: not timed), and adds the last token, forced tokens and drafts to
    // the batch.
    void add_round(spec::Proposal drafted, std::optional<int64_t> draft_ns);
    // This run's part of the step's batch: its first index and how many tokens.
    struct BatchPart {
        int32_t first = 0;
        int32_t n     = 0;
    };
    BatchPart batch_part() const { return part_; }
    // Whether this request feeds the draft head's own cache (it may draft: a request that
    // turned drafting off does not pay for it).
    bool      feeds_head() const;
    // Reads this run's logits after the step's decode (`decode_ns` long, of
    // `batch_positions` positions shared by `batch_runs` requests).
    void after_decode(int64_t decode_ns, int batch_runs, int batch_positions);
    // Releases held-back text and completes the result.
    GenerateResult finish();

  private:
    enum class Phase { prefill, generate, ended };

    void        begin_prefill();
    void        after_prefill_chunk();
    void        after_round(int64_t decode_ns, int batch_runs, int batch_positions);

    const RunEnv &        env_;
    MultimodalPrompt      mm_;
    GenerateOptions       opts_;
    TextSink              emit_;
    LogprobSink           emit_logprobs_;
    GenerateResult        result_;
    Sampler               sampler_;
    TokenChoice           choice_;
    spec::Rng             rng_; // rejection sampling only
    spec::DepthController depth_;
    GenerationOutput      out_;
    Phase                 phase_     = Phase::prefill;
    int32_t               n_keep_    = 0;
    bool                  can_shift_ = false;
    int64_t               t0_ = 0, t1_ = 0;

    // Prefill.
    bool   prefill_started_ = false;
    size_t pos_             = 0; // the next prompt token to evaluate
    size_t prompt_kept_     = 0; // prompt tokens whose KV was reused
    size_t next_image_      = 0;

    // The round in the step's batch.
    llama_token     last_       = -1; // committed, not decoded yet
    int32_t         logits_idx_ = -1; // the batch index of `last_` (prefill: of the prompt's last token)
    spec::seq_index next_index_ = 0;  // the sequence index of the next token chosen
    RoundPlan   plan_;
    BatchPart   part_;
};

} // namespace specd::engine
