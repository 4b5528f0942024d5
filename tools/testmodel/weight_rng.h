#pragma once

#include <cstdint>
#include <random>
#include <string_view>

// Fixture files must be byte-identical for the same seed on every platform and standard
// library. std::*_distribution is implementation-defined and libm's transcendental functions
// are not correctly rounded everywhere, so weights come from mt19937_64 (fully specified)
// through exact or correctly-rounded IEEE arithmetic only: a uniform distribution.
class weight_rng {
public:
    // One independent stream per (seed, name): a tensor's values do not depend on which
    // other tensors exist, so a draft's layers reappear bit-exactly inside its target.
    weight_rng(uint64_t seed, std::string_view stream_name);

    // Uniform in [-bound, bound).
    float uniform(double bound);

    // Uniform integer in [0, n), without modulo bias.
    uint64_t below(uint64_t n);

private:
    std::mt19937_64 gen_;
};
