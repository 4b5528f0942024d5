#pragma once
// Rejection sampling of one draft position against the target (DESIGN.md, "One decode round",
// step 4): the accepted-or-resampled token is distributed exactly as a draw from the
// target's own distribution p, whatever the draft's distribution q was. (Greedy and seeded
// requests verify by equality with the target's own choice: engine/round.)
#include "spec/token_dist.h"

namespace specd::spec {

struct PositionVerdict {
    bool     accepted = false;
    token_id token    = -1; // the draft token when accepted, else the target's replacement
};

// Stochastic: accept `drafted` with probability min(1, p(x) / q(x)); otherwise draw from the
// residual max(0, p - q), renormalised. `q` is the distribution the draft was drawn from.
PositionVerdict verify_stochastic(token_id drafted, const TokenDist & p, const TokenDist & q, Rng & rng);

// The residual distribution max(0, p - q) / Z (p itself when Z is 0, which only happens when
// q covers p exactly and the rejection had probability 0).
TokenDist residual(const TokenDist & p, const TokenDist & q);

} // namespace specd::spec
