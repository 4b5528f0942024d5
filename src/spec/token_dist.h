#pragma once
// A sampling distribution over the vocabulary, kept sparse: the candidates that survived the
// sampler's filters (top-k, top-p, ...) with their probabilities. Token ids are llama.cpp's
// (int32), but nothing here includes llama.cpp.
#include <cstdint>
#include <random>
#include <vector>

namespace specd::spec {

using token_id = int32_t;

struct TokenDist {
    std::vector<token_id> ids;   // (n_candidates)
    std::vector<float>    probs; // (n_candidates), sums to 1

    float prob_of(token_id t) const;
    // Draws one token with `u` uniform in [0, 1).
    token_id draw(double u) const;
    // A point mass: what a deterministic drafter (n-gram, forced text) proposes.
    static TokenDist point(token_id t) { return {{t}, {1.0f}}; }
};

// The generator every stochastic choice of a request uses: one seed, one stream.
using Rng = std::mt19937_64;

inline double uniform01(Rng & rng) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }

} // namespace specd::spec
