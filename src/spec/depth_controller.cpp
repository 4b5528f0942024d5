#include "spec/depth_controller.h"

#include <algorithm>
#include <cmath>

namespace specd::spec {

namespace {

// A Jeffreys Beta(0.5, 0.5) under everything: the estimate never reaches exactly 0 or 1,
// and its spread stays honest when the prior's pseudo-counts have faded away.
constexpr double k_alpha_base = 0.5;
// How many observations' worth the prior's cost ratios weigh against measured times. Small:
// they only decide what the measurements cannot (e.g. the t_1 / c_v split when every round
// verified the same number of positions).
constexpr double k_cost_prior_weight = 0.25;
// How many one-token steps the model's timed step time weighs in a new request: enough to
// hold t_1 while the request drafts every round, little beside its own steps at depth 0.
constexpr double k_step_prior_weight = 2.0;
// Below this weight of one-token steps a drafting request takes a round without drafts to time one.
constexpr double k_one_step_min_weight = 0.5;
// The pool's counts weigh this much against the request's own. They include the request's
// own rounds, so with one request running the estimate is the same and only its spread
// narrows; with b requests the others' rounds steady it.
constexpr double k_pool_weight = 0.5;
// A probe accepted in full although we gave that less than this chance hints at drift.
constexpr double k_probe_surprise = 0.25;
// fold_into: a request moves the model's prior by at most half the way, and only in
// proportion to its evidence (trials, rounds) against these.
constexpr double k_fold_trials   = 32.0;
constexpr double k_fold_rounds   = 8.0;
constexpr double k_fold_step_max = 0.5;
// The shape by position: each position's estimate is pulled towards the one before it with
// this many pseudo-trials, so a position with little evidence (deep ones are drafted only
// behind accepted ones) reads like its neighbour and one never drafted like the deepest
// measured; the prior's shape weighs at most this many trials per position in a new request
// (enough to plan its first rounds, little beside its own rounds); and the trials the prior
// keeps per position are scaled down together past the cap, keeping their mix.
constexpr double k_shape_shrink       = 4.0;
constexpr double k_shape_prior_weight = 16.0;
constexpr double k_shape_trials_cap   = 4096.0;
// A measured time is bounded against the fit only once the fit stands on this many of the
// request's own rounds of that kind (steps without drafts, steps with, timed drafts): before,
// the prediction is mostly the prior's ratios, which may be far off for a new pair.
constexpr int64_t k_spike_min_rounds = 2;
// How far a round may reach past what has been measured: no deeper than `k_trust_reach`
// positions beyond the deepest one tried (`k_trust_trials`: by the prior's trials and the
// request's; a position is tried when the drafts before it were accepted). Deeper positions'
// acceptance is extrapolated from their neighbours, and under the early rounds' optimism it
// came out near 1: on the MTP bench pair at agreement 0.9 alone (bench/mtp.json's mtp_09) a
// request drafted 6 tokens, had all 6 accepted and then planned 12 or 15 of which 2 were
// accepted: 110-128 ms for 3 tokens, where its rounds of 4 took 55 ms for 4.2 on average.
constexpr double k_trust_trials = 1.0;
constexpr int    k_trust_reach  = 2;
// No position's acceptance is planned as certain: a run of sure accepts would make every
// depth look free.
constexpr double k_position_p_max = 0.999;

// A measured time, at most `spike` x `predicted` (predicted <= 0 or spike <= 1: as measured);
// `clamped` counts the times it was bounded.
double bounded(double measured, double predicted, double spike, int64_t & clamped) {
    if (spike <= 1.0 || predicted <= 0.0 || measured <= spike * predicted) return measured;
    clamped++;
    return spike * predicted;
}

double blend(double prior, double measured, double evidence, double evidence_half) {
    const double eta = std::min(k_fold_step_max, evidence / (evidence + evidence_half));
    return (1.0 - eta) * prior + eta * measured;
}

} // namespace

DepthController::DepthController(const DepthPrior & prior, std::optional<int> draft_num_predict,
                                 const DepthConfig & config, AcceptancePool * pool, const StepCosts * steps)
    : config_(config), prior_(prior), pool_(pool), steps_(steps) {
    config_.k_max              = std::max(0, config_.k_max);
    config_.probe_interval_min = std::max(1, config_.probe_interval_min);
    config_.probe_interval_max = std::max(config_.probe_interval_min, config_.probe_interval_max);
    cap_ = std::clamp(draft_num_predict.value_or(config_.k_max), 0, config_.k_max);

    const double alpha  = std::clamp(prior.alpha, 0.0, 1.0);
    const double weight = std::max(0.0, prior.alpha_weight);
    acc_a_              = alpha * weight;
    acc_b_              = (1.0 - alpha) * weight;

    const double fp     = std::clamp(prior.forced_p, 0.0, 1.0);
    const double fw     = std::max(0.0, prior.forced_weight);
    forced_a_           = fp * fw;
    forced_b_           = (1.0 - fp) * fw;

    if (prior.step_s > 0.0) verify_zero_.add(0.0, prior.step_s, k_step_prior_weight);

    zero_streak_   = std::max(0, prior.zero_streak);
    failed_probes_ = std::clamp(prior.failed_probes, 0, 16);
    // The model's last request ended parked at 0 with probes confirming it: this one starts
    // there too. Exploring would draft its first rounds on optimism alone and restart the
    // probes' back-off (4 probes per 128-token answer instead of 1, each about a step's time
    // with an EAGLE3 head at agreement 0.6); the probes go on where the last request left them.
    explore_ = failed_probes_ == 0;

    stats_.drafted_per_position.assign(size_t(config_.k_max), 0);
    stats_.accepted_per_position.assign(size_t(config_.k_max), 0);

    const size_t positions = size_t(config_.k_max);
    prior_pos_s_.assign(positions, 0.0);
    prior_pos_n_.assign(positions, 0.0);
    own_pos_n_.assign(positions, 0);
    pos_recent_.assign(positions, 0.0);
    // The prior's alpha stands for `alpha_weight` trials in the mix of positions the model's
    // requests drafted: the recent mix starts as that.
    double prior_trials = 0.0;
    for (size_t i = 0; i < positions && i < prior.position_trials.size(); ++i) {
        prior_trials += std::max(0.0, prior.position_trials[i]);
    }
    for (size_t i = 0; i < positions && i < prior.position_trials.size() && i < prior.position_p.size(); ++i) {
        const double n = std::max(0.0, prior.position_trials[i]);
        const double w = std::min(n, k_shape_prior_weight);
        prior_pos_s_[i] = std::clamp(prior.position_p[i], 0.0, 1.0) * w;
        prior_pos_n_[i] = w;
        pos_recent_[i]  = prior_trials > 0.0 ? weight * n / prior_trials : 0.0;
    }
}

double DepthController::beta_a() const {
    return k_alpha_base + acc_a_ + (pool_ ? k_pool_weight * pool_->successes() : 0.0);
}

double DepthController::beta_b() const {
    return k_alpha_base + acc_b_ + (pool_ ? k_pool_weight * pool_->failures() : 0.0);
}

double DepthController::alpha() const { return beta_a() / (beta_a() + beta_b()); }

// While a request has drafted little, plan with an upper estimate of alpha: drafting a
// little too deep early costs a few rounds, drafting too shallow teaches nothing.
double DepthController::alpha_plan() const {
    const double a    = beta_a();
    const double b    = beta_b();
    const double mean = a / (a + b);
    const double sd   = std::sqrt(a * b / ((a + b) * (a + b) * (a + b + 1.0)));
    const double left = config_.explore_rounds > 0 && explore_
                            ? 1.0 - double(drafting_rounds_) / double(config_.explore_rounds)
                            : 0.0;
    return std::min(mean + config_.explore_z * std::max(0.0, left) * sd, 1.0);
}

std::vector<double> DepthController::acceptance_by_position() const {
    return acceptance_by_position(alpha_plan(), cap_);
}

std::vector<double> DepthController::acceptance_by_position(double level, int n) const {
    const size_t positions = own_pos_n_.size();
    // Successes and trials by position: the prior's and this request's.
    std::vector<double> s(positions), t(positions);
    double              s_all = 0.0, n_all = 0.0;
    for (size_t i = 0; i < positions; ++i) {
        s[i] = prior_pos_s_[i] + double(stats_.accepted_per_position[i]);
        t[i] = prior_pos_n_[i] + double(own_pos_n_[i]);
        s_all += s[i];
        n_all += t[i];
    }
    // Each position's rate, pulled towards the one before it; the first towards the rate of
    // all positions together.
    std::vector<double> rate(positions);
    double              before = n_all > 0.0 ? s_all / n_all : 1.0;
    for (size_t i = 0; i < positions; ++i) {
        rate[i] = (s[i] + k_shape_shrink * before) / (t[i] + k_shape_shrink);
        before  = rate[i];
    }
    // The level was measured on the recent rounds' positions: scale the shape to average 1
    // over them.
    double mix = 0.0, recent = 0.0;
    for (size_t i = 0; i < positions; ++i) {
        mix += pos_recent_[i] * rate[i];
        recent += pos_recent_[i];
    }
    const double mean = recent > 0.0 && mix > 0.0 ? mix / recent : (n_all > 0.0 ? s_all / n_all : 1.0);
    std::vector<double> h(size_t(std::max(0, n)), std::clamp(level, 0.0, k_position_p_max));
    for (size_t i = 0; i < h.size() && positions > 0; ++i) {
        const double shape = mean > 0.0 ? rate[std::min(i, positions - 1)] / mean : 1.0;
        h[i]               = std::clamp(level * shape, 0.0, k_position_p_max);
    }
    return h;
}

// The verify times' fit (spec/step_fit.h), o and c_v pulled towards the prior's ratios to t_1
// with k_cost_prior_weight observations' worth; in a batch, the session's steps'
// (spec/step_costs.h) where it has timed any. The draft cost is a weighted ratio, pulled
// towards the prior's.
DepthCosts DepthController::costs() const {
    StepSums s = verify_zero_;
    s.merge(verify_drafting_);
    if (steps_ && batch_size_ > 1) {
        if (const StepSums session = steps_->sums(); session.w > 0.0) s = session;
    }
    const StepFit fit = fit_steps(s, prior_.overhead_cost, prior_.verify_cost, k_cost_prior_weight);
    if (fit.t_1 <= 0.0) return {};

    DepthCosts out;
    out.t_1 = fit.t_1;
    out.o   = fit.o;
    out.c_v = fit.c_v;
    const double d_prior = std::max(0.0, prior_.draft_cost) * out.t_1;
    out.c_d = (draft_s_ + k_cost_prior_weight * d_prior) / (draft_n_ + k_cost_prior_weight);
    return out;
}

double DepthController::forced_p() const {
    return (k_alpha_base + forced_a_) / (2.0 * k_alpha_base + forced_a_ + forced_b_);
}

// Expected tokens per second of a round verifying m forced tokens and then k drafts: the
// forced run is accepted token by token with probability p, and the drafts are judged only
// behind a fully accepted forced run, so their value is discounted by p^m.
//   tokens = 1 + (p + ... + p^m) + p^m (a + ... + a^k),
//   time   = t_1 + [m + k > 0] o + m c_v + k (c_d + c_v)
DepthController::RoundPlan DepthController::best_round(int forced_min, int forced_max) const {
    double t_1 = 1.0; // only ratios matter; before any measurement the prior's ratios stand
    double c_d = std::max(0.0, prior_.draft_cost), c_v = std::max(0.0, prior_.verify_cost);
    double o   = std::max(0.0, prior_.overhead_cost);
    if (const DepthCosts m = costs(); m.t_1 > 0.0) {
        t_1 = m.t_1;
        o   = m.o;
        c_d = m.c_d;
        c_v = m.c_v;
    }
    // With B requests sharing the target's batch, a step without drafts costs t_1 + (B - 1)
    // c_v, shared by all of them, while each extra position delays every one: for the batch's
    // total rate, a request weighs its positions against its share of the step (at the
    // optimum each request's marginal tokens per position equal the batch's rate times c_v).
    // So depth shrinks as load grows. Such a step has several positions anyway: the fixed
    // cost o is the batch's, paid whatever this request drafts.
    const double b = double(std::max(1, batch_size_));
    if (b > 1.0) {
        t_1 = (t_1 + o + (b - 1.0) * c_v) / b;
        o   = 0.0;
    }
    const std::vector<double> h = acceptance_by_position(alpha_plan(), cap_);
    const double              p = forced_p();
    const int                 k_top = std::min(cap_, trusted_depth());
    RoundPlan           best{forced_min, 0};
    double              best_rate = -1.0;
    std::vector<double> best_rates; // best's rate by k, for the preference for shallow rounds
    std::vector<double> rates(size_t(std::max(0, k_top)) + 1);
    double              forced_sum = 0.0, p_m = 1.0;
    for (int m = 0; m <= forced_max; ++m) {
        if (m > 0) {
            p_m *= p;
            forced_sum += p_m;
        }
        if (m < forced_min) continue;
        double draft_sum = 0.0, a_k = 1.0;
        bool   better    = false;
        for (int k = 0; k <= k_top; ++k) {
            if (k > 0) {
                a_k *= h[size_t(k - 1)];
                draft_sum += a_k;
            }
            const double fixed = m + k > 0 ? o : 0.0;
            rates[size_t(k)]   = (1.0 + forced_sum + p_m * draft_sum) / (t_1 + fixed + m * c_v + k * (c_d + c_v));
            if (rates[size_t(k)] > best_rate) {
                best      = {m, k};
                best_rate = rates[size_t(k)];
                better    = true;
            }
        }
        if (better) best_rates = rates;
    }
    // In a batch, the shallowest drafting round within prefer_shallow of the best (whether to
    // draft at all stays the rates' call). Alone, where a round's cost is its own and timed
    // whole, the margin only costs: a drafter whose acceptance rises with depth explores deep
    // positions less and learns them worse (0.944 of the best fixed depth in the unit
    // simulation of LearnsAcceptanceThatChangesWithDepth, against 0.97-0.99 without).
    for (int k = 1; b > 1.0 && k < best.k; ++k) {
        if (best_rates[size_t(k)] >= (1.0 - config_.prefer_shallow) * best_rate) {
            best.k = k;
            break;
        }
    }
    return best;
}

int DepthController::best_k() const { return best_round(0, 0).k; }

int DepthController::trusted_depth() const {
    int deepest = 0;
    for (size_t i = 0; i < own_pos_n_.size(); ++i) {
        if (prior_pos_n_[i] + double(own_pos_n_[i]) >= k_trust_trials) deepest = int(i) + 1;
    }
    return deepest + k_trust_reach;
}

bool DepthController::wants_forced() {
    forced_probe_ = false;
    if (cap_ == 0) return false;
    if (config_.fixed_k >= 0) return config_.fixed_k > 0;
    if (best_round(0, config_.forced_max).forced > 0) {
        forced_idle_rounds_   = 0;
        forced_failed_probes_ = 0;
        return true;
    }
    // Like depth 0: probe now and then, less often while probes keep confirming it.
    const int interval = std::min(config_.probe_interval_max, config_.forced_probe_interval << forced_failed_probes_);
    if (++forced_idle_rounds_ < interval) return false;
    forced_idle_rounds_   = 0;
    forced_failed_probes_ = std::min(forced_failed_probes_ + 1, 16);
    forced_probe_         = true;
    return true;
}

int DepthController::plan_forced(int available) const {
    const int n = std::clamp(available, 0, config_.forced_max);
    if (cap_ == 0) return 0;
    if (config_.fixed_k >= 0) return config_.fixed_k > 0 ? n : 0;
    return forced_probe_ ? n : best_round(0, n).forced;
}

int DepthController::plan(int forced) {
    probe_pending_ = false;
    if (config_.fixed_k >= 0) return std::min(config_.fixed_k, cap_);
    if (cap_ == 0) {
        return 0;
    }
    // Behind a forced run the drafts are worth less (judged only if it is accepted).
    forced = std::clamp(forced, 0, config_.forced_max);
    if (const int k = best_round(forced, forced).k; k > 0) {
        // Alone in the batch, with no one-token step timed yet (this request's or the model's
        // earlier ones'), t_1 cannot be told from the fixed cost o: one round without drafts
        // times it (it is kept while the request drafts).
        if (forced == 0 && batch_size_ == 1 && drafting_rounds_ > 0 &&
            verify_zero_.w - verify_zero_.d < k_one_step_min_weight) {
            return 0;
        }
        // The back-off starts over once a round has shown that drafting pays (observe), not
        // on a plan alone: a request that starts on the model's stale costs may draft a round
        // and park again, and its probes go on at the interval they had reached.
        zero_streak_   = 0;
        probe_again_   = false;
        return k;
    }

    // Depth 0 teaches nothing about acceptance, so a controller that stopped here would stay
    // here: draft a little every so often, less often while probes keep confirming 0.
    const int interval = std::min(config_.probe_interval_max,
                                  config_.probe_interval_min << failed_probes_);
    if (++zero_streak_ < interval && !probe_again_) {
        return 0;
    }
    zero_streak_   = 0;
    probe_again_   = false;
    probe_pending_ = true;
    return std::clamp(config_.probe_k, 1, cap_);
}

int DepthController::plan_batch(int k) {
    probe_pending_ = false;
    if (config_.fixed_k >= 0) return std::min(config_.fixed_k, cap_);
    return std::clamp(k, 0, std::min(cap_, trusted_depth()));
}

std::vector<double> DepthController::expected_tokens() const {
    if (config_.fixed_k >= 0 || cap_ == 0) return {};
    const int                 top = std::min(cap_, trusted_depth());
    const std::vector<double> h   = acceptance_by_position(alpha_plan(), top);
    std::vector<double>       e(size_t(top) + 1, 1.0);
    double                    a_k = 1.0;
    for (int k = 1; k <= top; ++k) {
        a_k *= h[size_t(k - 1)];
        e[size_t(k)] = e[size_t(k - 1)] + a_k;
    }
    return e;
}

void DepthController::observe(const RoundObservation & round) {
    const int k        = std::max(0, round.k_planned);
    const int drafted  = std::max(0, round.n_drafted);
    const int accepted = round.drafts_judged ? std::clamp(round.n_accepted, 0, drafted) : 0;
    const int judged   = round.drafts_judged ? drafted : 0; // drafts with a verdict
    // How likely this round's full accept was under what we believed before it.
    double p_full_accept = 1.0;
    for (const double h : acceptance_by_position(alpha(), judged)) p_full_accept *= h;

    stats_.rounds++;
    stats_.k_sum += k;
    stats_.zero_k_rounds += k == 0 ? 1 : 0;
    stats_.drafted += drafted;
    stats_.accepted += accepted;
    if (size_t(judged) > stats_.drafted_per_position.size()) {
        stats_.drafted_per_position.resize(size_t(judged), 0);
        stats_.accepted_per_position.resize(size_t(judged), 0);
    }
    for (int i = 0; i < judged; ++i) {
        stats_.drafted_per_position[size_t(i)]++;
        stats_.accepted_per_position[size_t(i)] += i < accepted ? 1 : 0;
    }

    if (judged > 0) {
        // Censored geometric: `accepted` successes, and a failure only if one was seen.
        const int rejected = accepted < judged ? 1 : 0;
        acc_a_             = config_.alpha_forget * acc_a_ + accepted;
        acc_b_             = config_.alpha_forget * acc_b_ + rejected;
        drafting_rounds_++;
        successes_ += accepted;
        failures_ += rejected;
        if (pool_) pool_->add(accepted, rejected > 0);
        // Position i was tried when the drafts before it were accepted and it was drafted
        // (its successes are counted in stats_.accepted_per_position above).
        for (double & n : pos_recent_) n *= config_.alpha_forget;
        const size_t tried = std::min(size_t(std::min(judged, accepted + 1)), own_pos_n_.size());
        for (size_t i = 0; i < tried; ++i) {
            own_pos_n_[i] += 1;
            pos_recent_[i] += 1.0;
        }
    } else {
        acc_a_ *= config_.alpha_forget_idle;
        acc_b_ *= config_.alpha_forget_idle;
        for (double & n : pos_recent_) n *= config_.alpha_forget_idle;
    }

    if (const int forced = std::max(0, round.n_forced); forced > 0) {
        const int ok = std::clamp(round.n_forced_accepted, 0, forced);
        forced_a_    = config_.alpha_forget * forced_a_ + ok;
        forced_b_    = config_.alpha_forget * forced_b_ + (ok < forced ? 1 : 0);
        forced_successes_ += ok;
        forced_failures_ += ok < forced ? 1 : 0;
    }

    batch_size_ = std::max(1, round.batch_size);
    // The fit before this round: what its times are bounded against.
    const DepthCosts fit = costs();
    if (round.verify_s > 0.0) {
        // The step's positions beyond its first: alone, this request's forced and drafted ones.
        const int own = drafted + std::max(0, round.n_forced);
        const int x   = round.batch_positions > own ? round.batch_positions - 1 : own;
        // Timed steps of this kind so far: one-token ones, or those of several positions.
        const int64_t steps = x > 0 ? cost_rounds_ - one_steps_ : one_steps_;
        const bool fitted = steps >= k_spike_min_rounds;
        const double verify_s =
            bounded(round.verify_s, fitted ? fit.t_1 + (x > 0 ? fit.o : 0.0) + x * fit.c_v : 0.0,
                    config_.spike, stats_.clamped_steps);
        StepSums & sums = own > 0 ? verify_drafting_ : verify_zero_;
        sums.fade(config_.cost_forget);
        sums.add(double(x), verify_s);
        cost_rounds_++;
        if (x == 0) {
            one_step_s_ += verify_s;
            one_steps_++;
        }
    } else {
        stats_.untimed_rounds++;
    }
    if (drafted > 0 && round.draft_s >= 0.0) {
        const double draft_s = bounded(round.draft_s, draft_rounds_ >= k_spike_min_rounds ? drafted * fit.c_d : 0.0,
                                       config_.spike, stats_.clamped_drafts);
        draft_s_ = config_.cost_forget * draft_s_ + draft_s;
        draft_n_ = config_.cost_forget * draft_n_ + drafted;
        draft_rounds_++;
    } else if (drafted > 0) {
        stats_.untimed_drafts++;
    }

    if (judged > 0 && !probe_pending_ && best_k() > 0) failed_probes_ = 0;
    if (probe_pending_) {
        probe_pending_ = false;
        stats_.probes++;
        if (best_k() > 0) {
            failed_probes_ = 0;
        } else if (accepted == judged && judged > 0 && p_full_accept < k_probe_surprise) {
            // Acceptance may have changed, but one probe rarely outweighs the evidence that
            // parked us at 0: look again next round, and keep probing while the probes keep
            // being accepted, until the estimate itself says to draft. The back-off stays
            // where it was: at an acceptance of a few percent a one-token probe is accepted
            // now and then by chance, and starting the intervals over from the shortest on
            // each such accept gave 4-5 probes per 96-token answer after an image, where the
            // draft (which cannot see it) was accepted 4% of the time.
            // (An expected full accept, from a drafter good but too slow to pay, backs off.)
            probe_again_ = true;
        } else {
            failed_probes_ = std::min(failed_probes_ + 1, 16); // keeps the shift in range
        }
    }
}

void DepthController::fold_into(DepthPrior & prior) const {
    // The whole request's censored MLE, not the faded estimate: the prior is about the
    // model's typical acceptance, not the request's last few rounds.
    if (const int64_t trials = forced_successes_ + forced_failures_; trials > 0) {
        prior.forced_p = blend(prior.forced_p, double(forced_successes_) / double(trials), double(trials), k_fold_trials);
    }
    if (const int64_t trials = successes_ + failures_; trials > 0) {
        const double measured = double(successes_) / double(trials);
        prior.alpha           = blend(prior.alpha, measured, double(trials), k_fold_trials);
    }
    if (const DepthCosts m = costs(); m.t_1 > 0.0) {
        if (draft_n_ > 0.0) {
            // Weighed by the rounds that timed a draft: a request parked nearly all its life
            // measured c_d on its few probes, whatever its rounds measured of the rest.
            prior.draft_cost =
                blend(prior.draft_cost, m.c_d / m.t_1, double(draft_rounds_), k_fold_rounds);
        }
        if (verify_drafting_.w > 0.0) {
            prior.verify_cost =
                blend(prior.verify_cost, m.c_v / m.t_1, double(cost_rounds_), k_fold_rounds);
            prior.overhead_cost =
                blend(prior.overhead_cost, m.o / m.t_1, double(cost_rounds_), k_fold_rounds);
        }
    }
    if (one_steps_ > 0) {
        const double measured = one_step_s_ / double(one_steps_);
        prior.step_s          = prior.step_s > 0.0 ? blend(prior.step_s, measured, double(one_steps_), k_fold_rounds)
                                                   : measured;
    }
    // The shape: each position's rate moves like alpha; the trials keep the positions' mix.
    const size_t positions = own_pos_n_.size();
    if (prior.position_p.size() < positions) prior.position_p.resize(positions, 0.0);
    if (prior.position_trials.size() < positions) prior.position_trials.resize(positions, 0.0);
    double most = 0.0;
    for (size_t i = 0; i < positions; ++i) {
        if (own_pos_n_[i] == 0) continue;
        const double measured = double(stats_.accepted_per_position[i]) / double(own_pos_n_[i]);
        prior.position_p[i]   = prior.position_trials[i] > 0.0
                                    ? blend(prior.position_p[i], measured, double(own_pos_n_[i]), k_fold_trials)
                                    : measured;
        prior.position_trials[i] += double(own_pos_n_[i]);
        most = std::max(most, prior.position_trials[i]);
    }
    if (most > k_shape_trials_cap) {
        for (double & n : prior.position_trials) n *= k_shape_trials_cap / most;
    }
    prior.zero_streak   = zero_streak_;
    prior.failed_probes = failed_probes_;
    prior.requests++;
}

} // namespace specd::spec
