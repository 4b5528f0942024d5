#pragma once
// One decode round of one request, as plain data between named steps (DESIGN.md, "One
// decode round"):
//   open_round    -> RoundPlan     forced text the grammar fixes, the draft depth, and
//                                  prompt lookup's drafts
//   (the session asks the draft model for every open round's drafts together)
//   close_round                    the drafts cut at the grammar's first illegal token
//   (the session's batch decodes `last` plus the plan's tokens, logits for all)
//   verify_round  -> RoundOutcome  position by position under the request's sampler: the
//                                  accepted prefix and the token that follows it
//   observation()                  what the depth controller learns from the round
// Each step reads only what it is given, so each can be read and tested alone.
#include "core/options.h"
#include "engine/forced_speller.h"
#include "engine/generation_output.h"
#include "engine/grammar_constraint.h"
#include "engine/projector.h"
#include "engine/sampler.h"
#include "spec/depth_controller.h"
#include "spec/drafter.h"
#include "spec/seeded_draw.h"

#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace specd::engine {

// Grammar-forced text proposed per round, at most: in tokens and in bytes of text.
constexpr int    k_forced_max       = 16;
constexpr size_t k_forced_max_bytes = 64;

// What one round verifies after the request's last committed token.
struct RoundPlan {
    std::vector<llama_token>     tokens;   // (n_forced + n_drafted): forced first, then drafts
    std::vector<spec::TokenDist> dists;    // (tokens): what each was drawn from (a point for forced)
    std::string                  forced_text; // the text the forced tokens spell
    int                          n_forced = 0;
    int                          k        = 0; // the draft depth planned, within the budget (before grammar cuts)
    GrammarDraftStats            grammar;      // this round's cuts and grammar time
    // Planning and drafting, wall time (nullopt: not timed, it is not the drafts' cost).
    std::optional<int64_t>       draft_ns = 0;

    // Between open_round and close_round: what the drafts continue (the history, `last` and
    // the forced tokens), the grammar's state after the forced text (when it differs from
    // the request's), and prompt lookup's drafts.
    std::vector<llama_token>           draft_history;
    std::optional<GrammarConstraint> after_forced;
    const GrammarConstraint *        request_grammar = nullptr;
    spec::Proposal                     lookup;
    uint64_t                           seed        = 0;
    spec::seq_index                    first_index = 0;

    int n_drafted() const { return static_cast<int>(tokens.size()) - n_forced; }
    // What a draft model is asked for: set when the round drafts and prompt lookup found
    // nothing. Valid while this plan is neither moved nor closed.
    std::optional<spec::DraftRequest> model_request() const;
};

// How a request chooses each token: the argmax at temperature 0, otherwise the seeded draw at
// the token's sequence index (spec/seeded_draw), so that a seed gives one text whatever was
// drafted; a draft is accepted where it equals that choice. `rejection`: drafts are verified
// by rejection sampling instead (exact too, but the text then depends on what was drafted),
// (GenerateOptions::rejection_sampling; the API allows it only for requests without a seed).
struct TokenChoice {
    bool     greedy    = true;
    uint64_t seed      = 0;
    bool     rejection = false;

    spec::token_id draw(const spec::TokenDist & p, spec::seq_index index) const {
        return greedy ? p.ids[0] : spec::seeded_draw(p, seed, index);
    }
};

// What verification decided.
struct RoundOutcome {
    int         n_accepted = 0;  // longest accepted prefix of plan.tokens
    llama_token next       = -1; // the token after it: committed, not decoded yet
    bool        done       = false; // the answer ended in this round
};

// Everything plan_round reads.
struct RoundInputs {
    const GrammarConstraint *  grammar = nullptr; // the constraint after `last`; null: none
    llama_token                  last    = -1;      // committed, decoded by this round
    std::span<const llama_token> history;           // the sequence's tokens before `last`
    int                          budget  = 0;       // positions the round may add after `last`
    uint64_t                     seed    = 0;       // the request's draw seed (TokenChoice)
    spec::seq_index              first_index = 0;   // the sequence index of the token after `last`
    bool                         may_draft   = true; // false: forced text only, no drafts (DraftingGate)
    // The depth the session chose for every round of a shared step (spec/batch_depth.h); a
    // round with forced text ahead plans its own.
    std::optional<int>           batch_depth;
};

// Opens the round: the text the grammar forces from here (free: no model ran to find it), as
// much of it as `depth` finds worth verifying, and the depth `depth.plan()` of the drafts
// behind it, tried first with `lookup` (prompt lookup: free). When that finds nothing, the
// plan's model_request() says what to ask a draft model for.
RoundPlan open_round(const RoundInputs & in, spec::DepthController & depth, spec::Drafter & lookup,
                     const ForcedSpeller & speller);

// Closes the round with the draft model's proposal (empty: none; prompt lookup's drafts are
// used when it found any) cut at the grammar's first illegal token; `model_ns` is this
// round's share of the draft model's time (nullopt: not timed, and the round's draft time is
// then not observed). Throws specd::Error(cancelled) when `cancel` is set.
void close_round(RoundPlan & plan, spec::Proposal model, std::optional<int64_t> model_ns,
                 const std::atomic<bool> & cancel);

// Verifies `plan` against the target's distributions at batch indices idx0 (for `last`)
// .. idx0 + plan.tokens.size() of `ctx`, the first of them choosing the token at sequence
// index `first_index`. Every chosen token is accepted into `sampler` and committed to `out`;
// where forced text was verified, `speller` learns how the target spelled it. `rng` serves
// rejection sampling only.
RoundOutcome verify_round(const RoundPlan & plan, llama_token last, int32_t idx0, spec::seq_index first_index,
                          const TokenChoice & choice, llama_context * ctx, Sampler & sampler, GenerationOutput & out,
                          ForcedSpeller & speller, const Model & model, spec::Rng & rng);

// The round as the depth controller sees it: `decode_ns` is the whole step's decode of
// `batch_positions` positions, shared by `batch_runs` requests.
spec::RoundObservation observation(const RoundPlan & plan, const RoundOutcome & outcome, int64_t decode_ns,
                                   int batch_runs, int batch_positions);

} // namespace specd::engine
