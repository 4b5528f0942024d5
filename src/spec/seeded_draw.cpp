#include "spec/seeded_draw.h"

#include <cmath>

namespace specd::spec {

namespace {

// SplitMix64's finaliser: a bijection on 64 bits whose outputs pass statistical tests for
// consecutive inputs, which is what a counter-based generator needs.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Each key part goes through the mixer before the next joins, so that (i, v) and (v, i) or
// nearby keys never share a stream. The (seed, index) part is the same for every candidate.
uint64_t position_key(uint64_t seed, seq_index index) { return mix(mix(seed) ^ static_cast<uint64_t>(index)); }

// 53 random bits -> u in (0, 1), never 0 or 1 (both would make the noise infinite).
double keyed_uniform(uint64_t position, token_id token) {
    const uint64_t h = mix(position ^ static_cast<uint32_t>(token));
    return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

} // namespace

double gumbel_noise(uint64_t seed, seq_index index, token_id token) {
    return -std::log(-std::log(keyed_uniform(position_key(seed, index), token)));
}

// argmax log p(v) + g(v) with g = -log(-log u(v)) is argmax p(v) / e(v) with e = -log u(v)
// (an exponential race): the same token from the same noise. Since e >= 1 - u, a candidate
// with p(v) <= best * (1 - u(v)) cannot win, which rules out most of a long tail without a
// logarithm: a full vocabulary costs about one hash per candidate.
token_id seeded_draw(const TokenDist & p, uint64_t seed, seq_index index) {
    const uint64_t position = position_key(seed, index);
    token_id       best     = p.ids.front();
    double         best_ratio = -1.0; // p / e of the best so far; every candidate beats it
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const double pv = p.probs[i];
        if (!(pv > 0.0)) continue;
        const double u = keyed_uniform(position, p.ids[i]);
        if (pv <= best_ratio * (1.0 - u)) continue;
        const double ratio = pv / -std::log(u);
        if (ratio > best_ratio) {
            best_ratio = ratio;
            best       = p.ids[i];
        }
    }
    return best;
}

} // namespace specd::spec
