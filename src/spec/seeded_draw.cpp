#include "spec/seeded_draw.h"

#include <cmath>
#include <limits>

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

} // namespace

double gumbel_noise(uint64_t seed, seq_index index, token_id token) {
    // Each key part goes through the mixer before the next joins, so that (i, v) and (v, i)
    // or nearby keys never share a stream.
    uint64_t h = mix(seed);
    h          = mix(h ^ static_cast<uint64_t>(index));
    h          = mix(h ^ static_cast<uint32_t>(token));
    // 53 random bits -> u in (0, 1), never 0 or 1 (both would make the noise infinite).
    const double u = (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return -std::log(-std::log(u));
}

token_id seeded_draw(const TokenDist & p, uint64_t seed, seq_index index) {
    token_id best       = p.ids.front();
    double   best_score = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < p.ids.size(); ++i) {
        if (!(p.probs[i] > 0.0f)) continue;
        const double score = std::log(double(p.probs[i])) + gumbel_noise(seed, index, p.ids[i]);
        if (score > best_score) {
            best_score = score;
            best       = p.ids[i];
        }
    }
    return best;
}

} // namespace specd::spec
