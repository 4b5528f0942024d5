#include "engine/round.h"

#include "core/error.h"
#include "engine/clock.h"
#include "spec/verifier.h"

#include <algorithm>
#include <optional>

namespace specd::engine {

namespace {

// The text `state` forces after `prev`, and its tokens (at most `max_tokens`) as the target
// is likely to spell them. The target may still spell the text differently; it then rejects
// the run where the tokens diverge, and the speller learns its choice.
void find_forced(const GrammarConstraint & state, llama_token prev, int max_tokens, const ForcedSpeller & speller,
                 RoundPlan & plan) {
    plan.forced_text = state.forced_text(k_forced_max_bytes);
    if (plan.forced_text.empty()) return;
    plan.tokens = speller.spell(prev, plan.forced_text, size_t(max_tokens));
    plan.tokens.resize(state.legal_prefix(plan.tokens));
}

// What the round's drafts continue, under the grammar's state after the forced text.
spec::DraftRequest request_of(const RoundPlan & plan) {
    return {.history     = plan.draft_history,
            .k           = plan.k,
            .constraint  = plan.after_forced ? &*plan.after_forced : plan.request_grammar,
            .seed        = plan.seed,
            .first_index = plan.first_index};
}

} // namespace

RoundPlan open_round(const RoundInputs & in, spec::DepthController & depth, spec::Drafter & lookup,
                     const ForcedSpeller & speller) {
    RoundPlan     plan;
    const int64_t t0 = now_ns();
    plan.request_grammar = in.grammar;
    plan.seed            = in.seed;

    // 1. Forced text, as much as is worth verifying.
    if (in.grammar && in.budget > 0 && depth.wants_forced()) {
        find_forced(*in.grammar, in.last, std::min(in.budget, k_forced_max), speller, plan);
        plan.tokens.resize(size_t(depth.plan_forced(static_cast<int>(plan.tokens.size()))));
        plan.n_forced = static_cast<int>(plan.tokens.size());
        for (llama_token t : plan.tokens) plan.dists.push_back(spec::TokenDist::point(t));
        if (plan.n_forced > 0) {
            plan.after_forced.emplace(in.grammar->clone());
            for (llama_token t : plan.tokens) plan.after_forced->accept(t);
        }
        plan.grammar.grammar_ns += now_ns() - t0;
    }

    // 2. The depth of the drafts behind it; prompt lookup tries first.
    // In a shared step the session's depth (spec/batch_depth.h), unless forced text is ahead.
    const int depth_k = in.batch_depth && plan.n_forced == 0 ? depth.plan_batch(*in.batch_depth) : depth.plan(plan.n_forced);
    plan.k           = in.may_draft ? std::min(depth_k, in.budget - plan.n_forced) : 0;
    plan.first_index = in.first_index + plan.n_forced;
    if (plan.k > 0) {
        plan.draft_history.assign(in.history.begin(), in.history.end());
        plan.draft_history.push_back(in.last);
        plan.draft_history.insert(plan.draft_history.end(), plan.tokens.begin(), plan.tokens.end());
        plan.lookup = lookup.propose(request_of(plan));
    }
    plan.draft_ns = now_ns() - t0;
    return plan;
}

std::optional<spec::DraftRequest> RoundPlan::model_request() const {
    if (k <= 0 || !lookup.empty()) return std::nullopt;
    return request_of(*this);
}

void close_round(RoundPlan & plan, spec::Proposal model, std::optional<int64_t> model_ns,
                 const std::atomic<bool> & cancel) {
    if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
    const int64_t  tg0      = now_ns();
    spec::Proposal proposal = plan.lookup.empty() ? std::move(model) : std::move(plan.lookup);
    // Prompt lookup copies what followed a match in the history, image positions included:
    // those are no tokens to propose.
    const auto image_at = std::find_if(proposal.tokens.begin(), proposal.tokens.end(), is_image_token);
    proposal.tokens.erase(image_at, proposal.tokens.end());
    proposal.dists.resize(proposal.tokens.size());
    // Under a grammar a draft is cut at its first illegal token: verifying it would only cost
    // positions the target is sure to reject.
    const GrammarConstraint * state = plan.after_forced ? &*plan.after_forced : plan.request_grammar;
    const size_t legal = state ? state->legal_prefix(proposal.tokens) : proposal.tokens.size();
    if (state) plan.grammar.grammar_ns += now_ns() - tg0;
    if (legal < proposal.tokens.size()) {
        if (legal == 0) ++plan.grammar.no_legal_draft;
        else ++plan.grammar.truncated_rounds;
        plan.grammar.truncated_tokens += static_cast<int64_t>(proposal.tokens.size() - legal);
    }
    plan.tokens.insert(plan.tokens.end(), proposal.tokens.begin(), proposal.tokens.begin() + legal);
    plan.dists.insert(plan.dists.end(), std::make_move_iterator(proposal.dists.begin()),
                      std::make_move_iterator(proposal.dists.begin() + legal));
    if (model_ns) {
        *plan.draft_ns += *model_ns + (now_ns() - tg0);
    } else {
        plan.draft_ns.reset();
    }
    // Nothing below reads them: the draft history can be long.
    plan.draft_history = {};
    plan.after_forced.reset();
    plan.lookup = {};
}

RoundOutcome verify_round(const RoundPlan & plan, llama_token last, int32_t idx0, spec::seq_index first_index,
                          const TokenChoice & choice, llama_context * ctx, Sampler & sampler, GenerationOutput & out,
                          ForcedSpeller & speller, const Model & model, spec::Rng & rng) {
    RoundOutcome     o;
    std::string_view forced_rest = plan.forced_text; // what is still forced at position i < n_forced
    for (size_t i = 0; i <= plan.tokens.size(); ++i) {
        const int32_t         idx      = idx0 + static_cast<int32_t>(i);
        const spec::TokenDist p        = sampler.distribution(ctx, idx);
        bool                  accepted = false;
        if (i < plan.tokens.size() && choice.rejection && !choice.greedy) {
            const auto v = spec::verify_stochastic(plan.tokens[i], p, plan.dists[i], rng);
            accepted     = v.accepted;
            o.next       = v.token;
        } else {
            // The target's own choice at this index decides; the draft is kept where it agrees.
            o.next   = choice.draw(p, first_index + static_cast<spec::seq_index>(i));
            accepted = i < plan.tokens.size() && o.next == plan.tokens[i];
        }
        sampler.accept(o.next);
        if (i < size_t(plan.n_forced)) {
            speller.learn(i == 0 ? last : plan.tokens[i - 1], forced_rest, o.next);
            forced_rest.remove_prefix(std::min(forced_rest.size(), model.token_piece(o.next).size()));
        }
        o.done = out.commit(o.next, ctx, idx);
        if (!accepted || o.done) break;
        ++o.n_accepted;
    }
    return o;
}

spec::RoundObservation observation(const RoundPlan & plan, const RoundOutcome & outcome, int64_t decode_ns,
                                   int batch_runs, int batch_positions) {
    // The drafts were judged only if the forced run ahead of them was accepted in full.
    const bool judged = outcome.n_accepted >= plan.n_forced;
    return {.k_planned         = std::max(plan.k, 0),
            .n_drafted         = plan.n_drafted(),
            .n_accepted        = judged ? outcome.n_accepted - plan.n_forced : 0,
            .n_forced          = plan.n_forced,
            .n_forced_accepted = std::min(outcome.n_accepted, plan.n_forced),
            .drafts_judged     = judged,
            .draft_s           = plan.draft_ns ? *plan.draft_ns / 1e9 : -1.0,
            .verify_s          = decode_ns / 1e9,
            .batch_size        = batch_runs,
            .batch_positions   = batch_positions};
}

} // namespace specd::engine
