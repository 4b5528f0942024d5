#include "engine/mirostat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using specd::engine::Mirostat;

namespace {

// Candidates whose softmax is `probs` (given in any order), as logits.
std::vector<llama_token_data> candidates(const std::vector<double> & probs) {
    std::vector<llama_token_data> out;
    for (size_t i = 0; i < probs.size(); ++i) out.push_back({llama_token(i), float(std::log(probs[i])), 0.0f});
    return out;
}

} // namespace

TEST(Mirostat, Version2CutsTokensMoreSurprisingThanMu) {
    // tau 1: mu starts at 2 bits, so tokens below probability 1/4 go.
    Mirostat m(2, 1.0f, 0.1f, 4);
    auto     c = candidates({0.15, 0.5, 0.05, 0.3});
    llama_token_data_array arr{c.data(), c.size(), -1, false};
    m.apply(arr);
    ASSERT_EQ(arr.size, 2u);
    EXPECT_EQ(arr.data[0].id, 1); // sorted, most probable first
    EXPECT_EQ(arr.data[1].id, 3);
    EXPECT_NEAR(arr.data[0].p, 0.5 / 0.8, 1e-5); // renormalised over the kept ones
    EXPECT_NEAR(arr.data[1].p, 0.3 / 0.8, 1e-5);
}

TEST(Mirostat, TheMostProbableTokenAlwaysStays) {
    Mirostat m(2, 0.01f, 0.1f, 3); // mu 0.02 bits: even the best is more surprising than that
    auto     c = candidates({0.4, 0.35, 0.25});
    llama_token_data_array arr{c.data(), c.size(), -1, false};
    m.apply(arr);
    ASSERT_EQ(arr.size, 1u);
    EXPECT_EQ(arr.data[0].id, 0);
    EXPECT_FLOAT_EQ(arr.data[0].p, 1.0f);
}

TEST(Mirostat, MuFollowsTheSurpriseOfTheTakenTokens) {
    Mirostat m(2, 1.0f, 0.1f, 8);
    EXPECT_FLOAT_EQ(m.mu(), 2.0f);
    m.accept(0.5f); // 1 bit: on target, mu stays
    EXPECT_FLOAT_EQ(m.mu(), 2.0f);
    m.accept(0.125f); // 3 bits: 2 over the target, mu drops by eta * 2
    EXPECT_NEAR(m.mu(), 1.8f, 1e-6);
    m.accept(1.0f); // no surprise: mu rises by eta * tau
    EXPECT_NEAR(m.mu(), 1.9f, 1e-6);
}

TEST(Mirostat, Version1CutsToTheTopKOfAZipfLaw) {
    // p_i ~ (i + 1)^-1.5 over 1000 tokens: the estimate finds s = 1.5, and with tau 5 (mu 10)
    // k = (0.5 * 2^10 / (1 - 1000^-0.5))^(1 / 1.5) = 65.4.
    std::vector<double> probs;
    double              z = 0.0;
    for (int i = 0; i < 1000; ++i) z += std::pow(i + 1.0, -1.5);
    for (int i = 0; i < 1000; ++i) probs.push_back(std::pow(i + 1.0, -1.5) / z);
    Mirostat m(1, 5.0f, 0.1f, 1000);
    auto     c = candidates(probs);
    llama_token_data_array arr{c.data(), c.size(), -1, false};
    m.apply(arr);
    EXPECT_EQ(arr.size, 65u);
    double sum = 0.0;
    for (size_t i = 0; i < arr.size; ++i) sum += arr.data[i].p;
    EXPECT_NEAR(sum, 1.0, 1e-5);
}
