#pragma once
// One decode round of one request, as plain data between named steps (DESIGN.md, "One
// decode round"):
//   plan_round    -> RoundPlan     forced text the grammar fixes, then drafts, cut at the
//                                  grammar's first illegal token
//   (the session's batch decodes `last` plus the plan's tokens, logits for all)
//   verify_round  -> RoundOutcome  position by position under the request's sampler: the
//                                  accepted prefix and the token that follows it
//   observation()                  what the depth controller learns from the round
// Each step reads only what it is given, so each can be read and tested alone.
#include "core/options.h"
#include "engine/forced_speller.h"
#include "engine/generation_output.h"
#include "engine/projector.h"
#include "engine/sampler.h"
#include "grammar/constraint.h"
#include "spec/depth_controller.h"
#include "spec/drafter.h"
#include "spec/seeded_draw.h"

#include <atomic>
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
    int64_t                      draft_ns = 0; // planning and drafting, wall time

    int n_drafted() const { return static_cast<int>(tokens.size()) - n_forced; }
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
    const grammar::Constraint *  grammar = nullptr; // the constraint after `last`; null: none
    llama_token                  last    = -1;      // committed, decoded by this round
    std::span<const llama_token> history;           // the sequence's tokens before `last`
    int                          budget  = 0;       // positions the round may add after `last`
    uint64_t                     seed    = 0;       // the request's draw seed (TokenChoice)
    spec::seq_index              first_index = 0;   // the sequence index of the token after `last`
};

// Plans the round: the text the grammar forces from here (free: no model ran to find it), as
// much of it as `depth` finds worth verifying, then up to `depth.plan()` drafts from
// `drafters` under the grammar's state after that text, cut at the first illegal token.
// Throws specd::Error(cancelled) when `cancel` is set while drafting.
RoundPlan plan_round(const RoundInputs & in, spec::DepthController & depth, spec::Drafter & drafters,
                     const ForcedSpeller & speller, const std::atomic<bool> & cancel);

// Verifies `plan` against the target's distributions at batch indices idx0 (for `last`)
// .. idx0 + plan.tokens.size() of `ctx`, the first of them choosing the token at sequence
// index `first_index`. Every chosen token is accepted into `sampler` and committed to `out`;
// where forced text was verified, `speller` learns how the target spelled it. `rng` serves
// rejection sampling only.
RoundOutcome verify_round(const RoundPlan & plan, llama_token last, int32_t idx0, spec::seq_index first_index,
                          const TokenChoice & choice, llama_context * ctx, Sampler & sampler, GenerationOutput & out,
                          ForcedSpeller & speller, const Model & model, spec::Rng & rng);

// The round as the depth controller sees it: `decode_ns` is the whole step's decode, shared
// by `batch_runs` requests.
spec::RoundObservation observation(const RoundPlan & plan, const RoundOutcome & outcome, int64_t decode_ns,
                                   int batch_runs);

} // namespace specd::engine
