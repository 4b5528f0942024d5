#pragma once
// How many tokens to draft in the next round: a pure policy. plan() returns a depth k,
// observe() takes what the round did; everything it knows arrives through observe().
//
// Model: draft position i is accepted with probability h_i once the drafts before it were,
// until the first rejection, so a round with k drafts yields E[tokens | k] = 1 + h_1 +
// h_1 h_2 + ... + h_1...h_k tokens (the accepted prefix plus the target's own
// bonus/correction token). h_i = alpha * s_i: a level alpha, learned fast (it drifts with the
// text, an image, the grammar), times a shape s_i, learned slowly and carried between the
// model's requests (how the drafter's acceptance changes with depth: a head that reads the
// target's hidden states errs more the further it drafts from them). With no evidence on the
// shape every s_i is 1 (a geometric run). A round costs
// time(k) = t_1 + [k > 0] * o + k * (c_d + c_v): a step of several positions costs a fixed o
// more than a one-token step (the target leaves its one-token path; a head's own cache is fed
// only after rounds that drafted). plan() picks the k in 0..cap with the highest
// E[tokens | k] / time(k), and keeps probing while that is 0 so it never parks there; it
// reaches at most two positions past the deepest one tried (trusted_depth()).
#include "spec/acceptance_pool.h"
#include "spec/step_costs.h"
#include "spec/step_fit.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace specd::spec {

// What one round did. Rounds that drafted nothing are observations too: they measure t_1.
struct RoundObservation {
    int    k_planned  = 0;   // what plan() returned
    int    n_drafted  = 0;   // drafts proposed (<= k_planned; grammar-forced tokens excluded)
    int    n_accepted = 0;   // longest accepted prefix of the drafts (<= n_drafted)
    // Grammar-forced tokens verified ahead of the drafts: free to propose, so they are not
    // part of k or of the acceptance estimate, but the target verified their positions.
    int    n_forced   = 0;
    int    n_forced_accepted = 0; // longest accepted prefix of the forced tokens
    // False when the target rejected a forced token: the drafts behind it were never judged,
    // so they say nothing about acceptance (they still cost drafting and verify time).
    bool   drafts_judged = true;
    double draft_s    = 0.0; // time spent producing the n_drafted drafts (< 0: not timed)
    double verify_s   = 0.0; // target time for the 1 + n_forced + n_drafted positions (0: not timed)
    int    batch_size = 1;   // requests sharing the target batch (verify_s is the whole batch's)
    // Positions the whole batch decoded (every request's, prompt chunks included); 0: only
    // this request's 1 + n_forced + n_drafted are known. verify_s is regressed on these: with
    // several requests drafting alike, its own positions alone would credit it with the
    // others' cost too and plan too shallow.
    int    batch_positions = 0;
};

// Per-model knowledge that seeds each request; the caller keeps one per model and folds
// finished requests back in (DepthController::fold_into). Costs are relative to t_1 so the
// prior carries no units.
struct DepthPrior {
    double  alpha        = 0.5;  // per-token acceptance
    double  alpha_weight = 4.0;  // pseudo-trials behind `alpha`: small, a request adapts fast
    double  draft_cost   = 0.05; // c_d / t_1
    double  verify_cost  = 0.05; // c_v / t_1
    double  overhead_cost = 0.1; // o / t_1
    // A one-token step in seconds, as the model's requests timed it (0: not yet). The one
    // absolute number: a request that drafts from its first round never times a step without
    // drafts, and without it t_1 and o could not be told apart.
    double  step_s       = 0.0;
    int64_t requests     = 0;    // requests folded in
    // Per-token acceptance of grammar-forced tokens, and its pseudo-trials: optimistic until
    // the model's requests have measured it (a target that spells forced text its own way
    // should not pay for the optimism again on every request).
    double  forced_p      = 0.75;
    double  forced_weight = 2.0;
    // The probing schedule goes on across requests: otherwise every short request would
    // start probing from scratch, and on a model where drafting does not pay those probes
    // (each one also brings the draft model's cache up to date) are a real cost.
    int     zero_streak   = 0;   // rounds at depth 0 since the last probe
    int     failed_probes = 0;   // probes in a row that confirmed depth 0
    // Acceptance by draft position, conditional on the drafts before it being accepted
    // ([i]: position i + 1), and the trials behind each (capped): the shape's evidence.
    std::vector<double> position_p;
    std::vector<double> position_trials;
};

struct DepthConfig {
    int    k_max              = 16;
    double alpha_forget       = 0.9;  // per drafting round: old rounds fade, drift is tracked
    // Per round without drafts. Parked at 0 nothing new is learned, and evidence that aged
    // there drifted back to the base (alpha 0.5): a pair accepted a quarter of the time came
    // to look worth drafting again after a long stretch at 0 and paid for drafting rounds
    // that only re-learned what was known. The probes (drafting rounds, which do fade the
    // evidence) are what notices a change.
    double alpha_forget_idle  = 1.0;
    double cost_forget        = 0.95; // per round, for the time measurements
    double explore_z          = 1.0;  // plan with mean + z * sd of alpha while uncertain ...
    int    explore_rounds     = 8;    // ... fading to the mean over this many drafting rounds
    int    probe_k            = 1;    // depth of a probe when the best depth is 0
    int    probe_interval_min = 8;    // zero rounds before a probe; doubles per probe that
                                      // confirms 0, a surprising full accept probes again
    int    probe_interval_max = 128;
    int    forced_max            = 16; // forced tokens per round, at most
    int    forced_probe_interval = 16; // rounds between forced probes while parked; doubles
                                       // per probe up to probe_interval_max
    // >= 0: a fixed depth instead of a policy (options.draft_depth): every round drafts
    // this many (at most the request's cap) and verifies all forced text found; nothing is
    // probed.
    int    fixed_k               = -1;
    // A timed step or draft slower than `spike` x what the fitted costs predict for it is
    // counted at that bound (once the fit stands on a few of the request's own rounds of that
    // kind): the machine stalls now and then (another process, the page cache), and one
    // stalled verify counted in full lifted the fitted o or c_v to most of a t_1 and parked a
    // head that paid 1.2-1.5x. A real slowdown still comes through, by this factor per round.
    // <= 1: every time counts in full.
    double spike                 = 1.5;
    // In a batch, a deeper round must promise this share more tokens per second than the
    // shallowest one as good within it. Near its best the rate hardly changes with depth, and
    // what it is computed from errs by a few percent the deeper it goes (acceptance measured
    // behind accepted drafts only, a step's cost extrapolated past the positions timed): on
    // bench/heads.json's g4head09 at 4 streams, depths 4-5 were planned 2% above 3 and
    // delivered 5-8% below it. Alone it does not apply (best_round says why).
    double prefer_shallow        = 0.03;
};

struct DepthStats {
    int64_t              rounds        = 0;
    int64_t              drafted       = 0;
    int64_t              accepted      = 0;
    int64_t              k_sum         = 0; // sum of k_planned, for mean_k
    int64_t              zero_k_rounds = 0;
    int64_t              probes        = 0;
    int64_t              untimed_rounds = 0; // rounds whose step was not timed (verify_s 0)
    int64_t              untimed_drafts = 0; // rounds that drafted, their drafts not timed (draft_s < 0)
    int64_t              clamped_steps  = 0; // timed steps counted at DepthConfig::spike x the fit
    int64_t              clamped_drafts = 0; // timed drafts counted at DepthConfig::spike x the fit
    std::vector<int64_t> drafted_per_position;  // [i]: rounds that drafted position i
    std::vector<int64_t> accepted_per_position; // [i]: rounds that accepted position i

    double mean_k() const { return rounds > 0 ? double(k_sum) / double(rounds) : 0.0; }
};

// Estimated costs in seconds; t_1 = 0 until the first observation.
struct DepthCosts {
    double t_1 = 0.0; // target step for one position
    double o   = 0.0; // a step of several positions costs this more, once
    double c_d = 0.0; // per drafted token
    double c_v = 0.0; // per extra verified position
};

class DepthController {
  public:
    // draft_num_predict caps k for this request (at most k_max); 0 disables drafting and
    // probing. `pool`, when given, is the pair's pooled acceptance: observe() adds this
    // request's evidence to it and the estimates weigh it beside the request's own (it must
    // outlive the controller). `steps`, when given, is what the session's steps cost: in a
    // batch the request plans with its fit instead of its own rounds' (the caller feeds it).
    explicit DepthController(const DepthPrior & prior,
                             std::optional<int> draft_num_predict = std::nullopt,
                             const DepthConfig & config = {}, AcceptancePool * pool = nullptr,
                             const StepCosts * steps = nullptr);

    // Grammar-forced tokens (under `format`) are free to find, but each verified position
    // costs c_v, the target may spell the text differently (then the rest of the run, and the
    // drafts behind it, are wasted). A round plans both parts together (best_round):
    //   wants_forced()      whether to look for forced text at all this round (a forced run
    //                       that never pays is probed every `forced_probe_interval` rounds);
    //   plan_forced(n)      how many of the n forced tokens found to verify;
    //   plan(m)             the depth k of the drafts behind those m forced tokens: best_k(),
    //                       or a probe after a run of zeros.
    bool wants_forced();
    int  plan_forced(int available) const;
    int  plan(int forced = 0);
    // The round's depth when the session chose one for the whole batch (spec/batch_depth.h):
    // `k`, within this request's cap and reach. Depth 0's probing schedule is left as it was.
    int  plan_batch(int k);
    // What the round did; call once per round, also when it drafted nothing.
    void observe(const RoundObservation & round);

    // At request end: move the model's prior towards what this request measured, in
    // proportion to how much it measured (a request that never drafted leaves alpha alone).
    void fold_into(DepthPrior & prior) const;

    // The k in 0..min(k_cap(), trusted_depth()) with the best expected rate under the current
    // estimates (no forced tokens ahead).
    int        best_k() const;
    // The deepest a round may plan: two positions past the deepest one tried (by the prior's
    // trials or this request's); beyond it acceptance is only extrapolated.
    int        trusted_depth() const;
    // Per-token acceptance of forced tokens (posterior mean, optimistic at first).
    double     forced_p() const;
    int        k_cap() const { return cap_; }
    // Posterior mean of alpha (the request's evidence and the pool's), and the optimistic
    // value best_k() uses while exploring. alpha is the acceptance of a draft position as the
    // recent rounds' positions mix them.
    double     alpha() const;
    double     alpha_plan() const;
    // h_1..h_cap as best_k() plans them (level alpha_plan()): [i] is position i + 1's
    // acceptance once the drafts before it were accepted.
    std::vector<double> acceptance_by_position() const;
    DepthCosts costs() const;
    // Expected tokens from a round of d drafts, for d = 0 .. min(k_cap(), trusted_depth()), as
    // best_k() weighs them (no forced tokens ahead); empty under a fixed depth, or with
    // drafting off. What the session's choice of one depth for a batch adds up.
    std::vector<double> expected_tokens() const;

    const DepthStats & stats() const { return stats_; }

  private:
    DepthConfig      config_;
    DepthPrior       prior_;
    AcceptancePool * pool_ = nullptr;
    const StepCosts * steps_ = nullptr;
    int         cap_ = 0;
    int         batch_size_ = 1; // requests in the last observed round's target batch

    // Acceptance: Beta(base + acc_a_, base + acc_b_). acc_* start at the prior's
    // pseudo-counts and fade with every drafting round (slowly while parked at 0). A round
    // that accepted all n drafts only says "run length >= n" (censored): n successes and no
    // failure, never a made-up one.
    double  acc_a_           = 0.0;
    double  acc_b_           = 0.0;
    int64_t drafting_rounds_ = 0;
    bool    explore_         = true; // alpha_plan's optimism while drafting_rounds_ is small
    int64_t successes_       = 0; // unfaded, for fold_into
    int64_t failures_        = 0;
    // The Beta's parameters: the base, the request's faded counts and a share of the pool's.
    double  beta_a() const;
    double  beta_b() const;

    // The shape, per draft position: the prior's pseudo-counts (successes, trials), and this
    // request's trials, unfaded (the shape is the drafter's, it does not drift with the text;
    // its successes are stats_.accepted_per_position); and the recent trials (faded like
    // acc_*), the mix of positions alpha was measured on.
    std::vector<double>  prior_pos_s_, prior_pos_n_;
    std::vector<int64_t> own_pos_n_;
    std::vector<double>  pos_recent_;
    // h_1..h_n for a level: alpha * s_i, the shape scaled so that it averages 1 over the
    // recent positions' mix (a level measured mostly at position 1 is position 1's rate).
    std::vector<double> acceptance_by_position(double level, int n) const;

    // Verify time = t_1 + [x > 0] * o + x * c_v, x = the step's positions beyond its first
    // (spec/step_fit.h). Rounds with and without drafts fade separately, so a long stretch at
    // depth 0 keeps what was learned about o and c_v.
    StepSums verify_zero_;
    StepSums verify_drafting_;
    // Draft cost as a weighted ratio: seconds / drafted tokens.
    double       draft_s_     = 0.0;
    double       draft_n_     = 0.0;
    int64_t      draft_rounds_ = 0; // rounds that timed a draft (unfaded)
    int64_t      cost_rounds_ = 0;
    // This request's own one-token steps (unfaded), for the prior's step_s.
    double       one_step_s_  = 0.0;
    int64_t      one_steps_   = 0;

    // Probing out of depth 0.
    int  zero_streak_   = 0;     // plans at 0 since the last draft or probe
    int  failed_probes_ = 0;     // probes in a row that confirmed 0: the back-off exponent
    bool probe_pending_ = false; // the last plan() was a probe
    bool probe_again_   = false; // the last probe was a surprising full accept

    struct RoundPlan {
        int forced = 0;
        int k      = 0;
    };
    // The (forced, k) with the best expected rate, forced_min <= forced <= forced_max.
    RoundPlan best_round(int forced_min, int forced_max) const;

    // Forced-token acceptance, per token, as a censored geometric like alpha.
    double  forced_a_           = 0.0;
    double  forced_b_           = 0.0;
    int64_t forced_successes_   = 0; // unfaded, for fold_into
    int64_t forced_failures_    = 0;
    int    forced_idle_rounds_ = 0;
    bool    forced_probe_         = false; // this round verifies forced text as a probe
    int     forced_failed_probes_ = 0;     // probes since forced text last paid: the back-off

    DepthStats stats_;
};

} // namespace specd::spec
