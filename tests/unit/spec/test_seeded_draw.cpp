#include "spec/seeded_draw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

using specd::spec::gumbel_noise;
using specd::spec::seeded_draw;
using specd::spec::TokenDist;

namespace {

// Pearson's chi-square of observed counts against n * p.
double chi_square(const std::vector<int> & counts, const std::vector<float> & probs, int n) {
    double x2 = 0.0;
    for (size_t i = 0; i < probs.size(); ++i) {
        const double e = double(n) * probs[i];
        x2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    return x2;
}

const TokenDist k_dist = {{7, 3, 42, 1000, 5}, {0.4f, 0.25f, 0.2f, 0.1f, 0.05f}};

} // namespace

TEST(SeededDraw, TheSameKeyGivesTheSameToken) {
    for (int64_t index = 0; index < 50; ++index) {
        EXPECT_EQ(seeded_draw(k_dist, 7, index), seeded_draw(k_dist, 7, index)) << index;
        EXPECT_EQ(gumbel_noise(7, index, 3), gumbel_noise(7, index, 3));
    }
}

TEST(SeededDraw, DrawsFollowTheDistributionOverSeeds) {
    // 4 degrees of freedom: chi-square above 18.5 has probability 0.001.
    const int        n = 20000;
    std::vector<int> counts(k_dist.ids.size(), 0);
    for (int s = 0; s < n; ++s) {
        const auto t = seeded_draw(k_dist, uint64_t(s), 12);
        for (size_t i = 0; i < k_dist.ids.size(); ++i) counts[i] += k_dist.ids[i] == t;
    }
    EXPECT_LT(chi_square(counts, k_dist.probs, n), 18.5);
}

TEST(SeededDraw, DrawsFollowTheDistributionAlongOneSequence) {
    // One seed, consecutive indices: what a single long answer sees.
    const int        n = 20000;
    std::vector<int> counts(k_dist.ids.size(), 0);
    for (int i = 0; i < n; ++i) {
        const auto t = seeded_draw(k_dist, 99, i);
        for (size_t j = 0; j < k_dist.ids.size(); ++j) counts[j] += k_dist.ids[j] == t;
    }
    EXPECT_LT(chi_square(counts, k_dist.probs, n), 18.5);
}

TEST(SeededDraw, NeighbouringIndicesAreIndependent) {
    // Pairs (draw at i, draw at i + 1) over seeds: the joint frequency of each pair is the
    // product of the marginals (24 degrees of freedom: chi-square above 51.2 has p 0.001).
    const int                    n = 40000;
    std::map<std::pair<int, int>, int> joint;
    for (int s = 0; s < n; ++s) joint[{seeded_draw(k_dist, uint64_t(s), 5), seeded_draw(k_dist, uint64_t(s), 6)}]++;
    double x2 = 0.0;
    for (size_t a = 0; a < k_dist.ids.size(); ++a) {
        for (size_t b = 0; b < k_dist.ids.size(); ++b) {
            const double e = double(n) * k_dist.probs[a] * k_dist.probs[b];
            const double o = joint[{k_dist.ids[a], k_dist.ids[b]}];
            x2 += (o - e) * (o - e) / e;
        }
    }
    EXPECT_LT(x2, 51.2);
}

TEST(SeededDraw, DifferentSeedsGiveDifferentSequences) {
    std::set<std::vector<int>> texts;
    for (uint64_t seed = 0; seed < 20; ++seed) {
        std::vector<int> text;
        for (int i = 0; i < 16; ++i) text.push_back(seeded_draw(k_dist, seed, i));
        texts.insert(text);
    }
    EXPECT_EQ(texts.size(), 20u);
}

TEST(SeededDraw, ZeroProbabilityCandidatesAreNeverDrawn) {
    const TokenDist p = {{1, 2, 3}, {0.0f, 1.0f, 0.0f}};
    for (int s = 0; s < 200; ++s) EXPECT_EQ(seeded_draw(p, uint64_t(s), s), 2);
}

TEST(SeededDraw, CouplingMakesSimilarDistributionsAgree) {
    // A draft drawing with the same noise from q close to p agrees with p's draw far more
    // often than an independent draw would.
    const TokenDist q = {{7, 3, 42, 1000, 5}, {0.35f, 0.3f, 0.2f, 0.1f, 0.05f}}; // TV 0.05
    int agree = 0, independent = 0;
    const int n = 10000;
    for (int s = 0; s < n; ++s) {
        agree += seeded_draw(k_dist, uint64_t(s), 3) == seeded_draw(q, uint64_t(s), 3);
        independent += seeded_draw(k_dist, uint64_t(s), 3) == seeded_draw(q, uint64_t(s) + 1000000, 3);
    }
    EXPECT_GT(agree, int(0.85 * n)); // Gumbel coupling guarantees at least (1 - TV) / (1 + TV) = 0.905
    EXPECT_LT(independent, int(0.4 * n));
}

// The draw skips candidates that cannot win without computing their noise: it must still be
// the argmax of log p + g over every candidate, for flat, peaked and long-tailed p.
TEST(SeededDraw, SkippingTheTailKeepsTheGumbelArgmax) {
    std::mt19937_64 rng(5);
    for (double spread : {0.1, 2.0, 6.0}) {
        std::normal_distribution<double> logit(0.0, spread);
        for (int trial = 0; trial < 200; ++trial) {
            TokenDist d;
            double    z = 0.0;
            for (int v = 0; v < 300; ++v) {
                d.ids.push_back(v * 13);
                d.probs.push_back(static_cast<float>(std::exp(logit(rng))));
                z += d.probs.back();
            }
            for (auto & p : d.probs) p = static_cast<float>(p / z);
            const uint64_t seed  = rng();
            const int64_t  index = trial;
            size_t best = 0;
            for (size_t i = 1; i < d.ids.size(); ++i) {
                const double a = std::log(double(d.probs[i])) + gumbel_noise(seed, index, d.ids[i]);
                const double b = std::log(double(d.probs[best])) + gumbel_noise(seed, index, d.ids[best]);
                if (a > b) best = i;
            }
            EXPECT_EQ(seeded_draw(d, seed, index), d.ids[best]) << "spread " << spread << " trial " << trial;
        }
    }
}
