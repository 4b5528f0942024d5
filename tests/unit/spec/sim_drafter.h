#pragma once
// A deterministic stand-in for a drafter + target pair: each draft position is accepted with
// probability alpha until the first rejection; times are t_1 + n * c_v to verify (plus
// `overhead` when n > 0) and n * c_d to draft, with a little multiplicative jitter. Seeded, and independent of the
// standard library's distributions, so every platform sees the same rounds.
#include "spec/acceptance_pool.h"
#include "spec/depth_controller.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace specd::spec::test {

struct SimParams {
    double alpha    = 0.5;
    double t_1      = 0.010; // seconds
    double c_d      = 0.0005;
    double c_v      = 0.0005;
    double jitter   = 0.05;  // +- relative noise on every measured time
    double coverage = 1.0;   // chance that the drafter has a next draft at all (n-gram misses)
    // What a step verifying more than one position costs beyond t_1 + n * c_v (a one-token
    // step takes a cheaper path, and a head's cache is fed only when it drafted).
    double overhead = 0.0;
    // When not empty: position i + 1 is accepted with by_position[i] (the last value for
    // deeper ones) instead of alpha.
    std::vector<double> by_position;
};

class SimDrafter {
  public:
    SimDrafter(const SimParams & p, uint64_t seed) : p_(p), state_(seed) {}

    void set_alpha(double alpha) { p_.alpha = alpha; }
    const SimParams & params() const { return p_; }

    // The step of a batch whose requests verify `positions` in all: t_1 + (positions - 1) c_v.
    double step_time(int positions) { return step_cost(p_, positions) * noise(); }
    static double step_cost(const SimParams & p, int positions) {
        return p.t_1 + (positions > 1 ? p.overhead : 0.0) + (positions - 1) * p.c_v;
    }

    RoundObservation round(int k) {
        RoundObservation r;
        r.k_planned = k;
        while (r.n_drafted < k && (p_.coverage >= 1.0 || uniform() < p_.coverage)) {
            r.n_drafted++;
        }
        while (r.n_accepted < r.n_drafted && uniform() < acceptance(r.n_accepted)) {
            r.n_accepted++;
        }
        r.draft_s  = r.n_drafted * p_.c_d * noise();
        r.verify_s = step_cost(p_, 1 + r.n_drafted) * noise();
        return r;
    }

    // What the round really cost; throughput is measured on this, not on the jittered times.
    double cost(const RoundObservation & r) const {
        return step_cost(p_, 1 + r.n_drafted) + r.n_drafted * p_.c_d;
    }

    // Position i + 1's acceptance once the drafts before it were accepted.
    double acceptance(int i) const {
        if (p_.by_position.empty()) return p_.alpha;
        return p_.by_position[std::min(size_t(i), p_.by_position.size() - 1)];
    }

  private:
    // splitmix64
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }
    double noise() { return 1.0 + p_.jitter * (2.0 * uniform() - 1.0); }

    SimParams p_;
    uint64_t  state_;
};

struct Throughput {
    double tokens  = 0.0;
    double seconds = 0.0;

    double per_second() const { return seconds > 0.0 ? tokens / seconds : 0.0; }
    void   add(const RoundObservation & r, double cost) {
        tokens += r.n_accepted + 1; // accepted prefix + the target's own token
        seconds += cost;
    }
};

inline Throughput run_fixed(const SimParams & p, int k, int rounds, uint64_t seed) {
    SimDrafter sim(p, seed);
    Throughput t;
    for (int i = 0; i < rounds; ++i) {
        const RoundObservation r = sim.round(k);
        t.add(r, sim.cost(r));
    }
    return t;
}

// Plays `warmup` rounds unmeasured, then measures `rounds` more.
inline Throughput run_controller(DepthController & dc, SimDrafter & sim, int warmup, int rounds) {
    Throughput t;
    for (int i = 0; i < warmup + rounds; ++i) {
        const RoundObservation r = sim.round(dc.plan());
        dc.observe(r);
        if (i >= warmup) {
            t.add(r, sim.cost(r));
        }
    }
    return t;
}

// `batch` requests of `tokens` tokens each decode together, one target step per round for
// all of them (the step's time grows with every request's positions, drafting costs c_d per
// token), for `waves` waves; each request's controller starts from the prior the finished
// ones folded into, and shares `pool` when one is given. Returns the batch's throughput.
inline Throughput run_batch(const SimParams & p, int batch, int tokens, int waves, AcceptancePool * pool,
                            uint64_t seed, int fixed_k = -1) {
    SimDrafter sim(p, seed);
    DepthPrior prior;
    Throughput t;
    for (int wave = 0; wave < waves; ++wave) {
        std::vector<DepthController> dcs;
        for (int i = 0; i < batch; ++i) dcs.emplace_back(prior, std::nullopt, DepthConfig{.fixed_k = fixed_k}, pool);
        std::vector<int> made(size_t(batch), 0);
        for (;;) {
            std::vector<int> ks(size_t(batch), -1);
            int              positions = 0, live = 0;
            for (int i = 0; i < batch; ++i) {
                if (made[size_t(i)] >= tokens) continue;
                ks[size_t(i)] = dcs[size_t(i)].plan();
                positions += 1 + ks[size_t(i)];
                ++live;
            }
            if (live == 0) break;
            const double step = sim.step_time(positions);
            for (int i = 0; i < batch; ++i) {
                if (ks[size_t(i)] < 0) continue;
                RoundObservation r = sim.round(ks[size_t(i)]);
                r.verify_s         = step;
                r.batch_size       = live;
                r.batch_positions  = positions;
                t.tokens += r.n_accepted + 1;
                t.seconds += r.n_drafted * p.c_d;
                made[size_t(i)] += r.n_accepted + 1;
                dcs[size_t(i)].observe(r);
                if (made[size_t(i)] >= tokens) dcs[size_t(i)].fold_into(prior);
            }
            t.seconds += SimDrafter::step_cost(p, positions);
            if (pool) pool->end_step();
        }
    }
    return t;
}

} // namespace specd::spec::test
