#include "spec/token_dist.h"

namespace specd::spec {

float TokenDist::prob_of(token_id t) const {
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] == t) return probs[i];
    }
    return 0.0f;
}

token_id TokenDist::draw(double u) const {
    double acc = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        acc += probs[i];
        if (u < acc) return ids[i];
    }
    // Rounding can leave the sum a hair below 1: the last candidate takes the remainder.
    return ids.back();
}

} // namespace specd::spec
