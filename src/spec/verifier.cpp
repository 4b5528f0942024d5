#include "spec/verifier.h"

#include <algorithm>

namespace specd::spec {

TokenDist residual(const TokenDist & p, const TokenDist & q) {
    TokenDist r;
    double    z = 0.0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const float d = p.probs[i] - q.prob_of(p.ids[i]);
        if (d > 0.0f) {
            r.ids.push_back(p.ids[i]);
            r.probs.push_back(d);
            z += d;
        }
    }
    if (z <= 0.0) return p;
    for (auto & x : r.probs) x = static_cast<float>(x / z);
    return r;
}

PositionVerdict verify_stochastic(token_id drafted, const TokenDist & p, const TokenDist & q, Rng & rng) {
    const float px = p.prob_of(drafted);
    const float qx = q.prob_of(drafted);
    // qx is 0 only if the drafter proposed a token it gave no mass to; treat as a rejection.
    if (qx > 0.0f && uniform01(rng) < std::min(1.0, static_cast<double>(px) / qx)) return {true, drafted};
    return {false, residual(p, q).draw(uniform01(rng))};
}

} // namespace specd::spec
