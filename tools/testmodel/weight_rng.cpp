#include "weight_rng.h"

namespace {

uint64_t fnv1a_64(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

// splitmix64 finaliser: nearby seeds (1, 2, 3) give unrelated generator states.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace

weight_rng::weight_rng(uint64_t seed, std::string_view stream_name)
    : gen_(mix(seed ^ mix(fnv1a_64(stream_name)))) {}

float weight_rng::uniform(double bound) {
    const double u = double(gen_() >> 11) * 0x1.0p-53; // exact: 53 random bits in [0, 1)
    return float((2.0 * u - 1.0) * bound);
}

uint64_t weight_rng::below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = gen_();
    } while (x >= limit);
    return x % n;
}
