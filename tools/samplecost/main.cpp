// specd-sample-cost [REPS]
//
// The per-token cost of choosing a token from a target distribution, as the decode loop does
// after the sampler chain: the seeded draw (Gumbel-max keyed by seed, index and token; what
// every request uses since reproducible sampling) against the inverse-CDF draw from one
// uniform it replaced (TokenDist::draw, what rejection sampling still uses), on candidate
// sets of the sizes the chain leaves: top_k 40, a top_p cut of ~1,000, and a whole 32,064 /
// 151,936-token vocabulary (top_k 0, top_p 1). Prints one JSON object with the median
// nanoseconds per token of each over REPS (default 200) batches. Numbers, no pass/fail.
#include "spec/seeded_draw.h"
#include "spec/token_dist.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace specd;

namespace {

// A softmax of random logits over n candidates (ids spread over a large vocabulary).
spec::TokenDist random_dist(size_t n, std::mt19937_64 & rng) {
    std::normal_distribution<float> logit(0.0f, 3.0f);
    spec::TokenDist                 d;
    d.ids.resize(n);
    d.probs.resize(n);
    double z = 0.0;
    for (size_t i = 0; i < n; ++i) {
        d.ids[i]   = static_cast<spec::token_id>(i * 7 % 151936);
        d.probs[i] = std::exp(logit(rng));
        z += d.probs[i];
    }
    for (auto & p : d.probs) p = static_cast<float>(p / z);
    return d;
}

template <class F> double median_ns_per_call(int reps, int calls, F && f) {
    std::vector<double> per_call;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) f(c);
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        per_call.push_back(ns / calls);
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
}

} // namespace

int main(int argc, char ** argv) {
    const int         reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    std::mt19937_64   rng(42);
    nlohmann::json    out = nlohmann::json::array();
    int64_t           sink = 0; // printed below: keeps the draws from being optimised away
    for (size_t n : {size_t(40), size_t(1000), size_t(32064), size_t(151936)}) {
        const spec::TokenDist d     = random_dist(n, rng);
        const int             calls = static_cast<int>(std::max<size_t>(1, 200000 / n));
        const double seeded = median_ns_per_call(reps, calls, [&](int c) { sink += spec::seeded_draw(d, 7, c); });
        std::uniform_real_distribution<double> u(0.0, 1.0);
        const double inverse = median_ns_per_call(reps, calls, [&](int) { sink += d.draw(u(rng)); });
        out.push_back({{"candidates", n}, {"seeded_ns", seeded}, {"inverse_cdf_ns", inverse}, {"ratio", seeded / inverse}});
    }
    std::printf("%s\n", out.dump(1).c_str());
    std::fprintf(stderr, "(checksum %lld)\n", static_cast<long long>(sink));
    return 0;
}
