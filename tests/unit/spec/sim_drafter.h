#pragma once
// A deterministic stand-in for a drafter + target pair: each draft position is accepted with
// probability alpha until the first rejection; times are t_1 + n * c_v to verify and
// n * c_d to draft, with a little multiplicative jitter. Seeded, and independent of the
// standard library's distributions, so every platform sees the same rounds.
#include "spec/depth_controller.h"

#include <cstdint>

namespace specd::spec::test {

struct SimParams {
    double alpha    = 0.5;
    double t_1      = 0.010; // seconds
    double c_d      = 0.0005;
    double c_v      = 0.0005;
    double jitter   = 0.05;  // +- relative noise on every measured time
    double coverage = 1.0;   // chance that the drafter has a next draft at all (n-gram misses)
};

class SimDrafter {
  public:
    SimDrafter(const SimParams & p, uint64_t seed) : p_(p), state_(seed) {}

    void set_alpha(double alpha) { p_.alpha = alpha; }
    const SimParams & params() const { return p_; }

    RoundObservation round(int k) {
        RoundObservation r;
        r.k_planned = k;
        while (r.n_drafted < k && (p_.coverage >= 1.0 || uniform() < p_.coverage)) {
            r.n_drafted++;
        }
        while (r.n_accepted < r.n_drafted && uniform() < p_.alpha) {
            r.n_accepted++;
        }
        r.draft_s  = r.n_drafted * p_.c_d * noise();
        r.verify_s = (p_.t_1 + r.n_drafted * p_.c_v) * noise();
        return r;
    }

    // What the round really cost; throughput is measured on this, not on the jittered times.
    double cost(const RoundObservation & r) const {
        return p_.t_1 + r.n_drafted * (p_.c_d + p_.c_v);
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

} // namespace specd::spec::test
