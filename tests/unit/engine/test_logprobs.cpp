#include "engine/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace specd::engine;

TEST(PositionLogprobs, IsTheLogSoftmaxOfTheLogits) {
    const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
    const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0));
    const auto   p = position_logprobs(logits, 2, 3);
    EXPECT_NEAR(p.chosen, 2.0 - z, 1e-6);
    ASSERT_EQ(p.top.size(), 3u);
    // Descending; equal logits by token id.
    EXPECT_EQ(p.top[0].first, 1);
    EXPECT_EQ(p.top[1].first, 3);
    EXPECT_EQ(p.top[2].first, 2);
    EXPECT_NEAR(p.top[0].second, 3.0 - z, 1e-6);
    EXPECT_FLOAT_EQ(p.top[2].second, p.chosen);
    double sum = 0;
    for (size_t t = 0; t < logits.size(); ++t) sum += std::exp(position_logprobs(logits, int32_t(t), 0).chosen);
    EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(PositionLogprobs, HandlesExtremesAndSmallVocabularies) {
    const std::vector<float> logits = {1000.0f, -INFINITY, 999.0f};
    const auto               p      = position_logprobs(logits, 0, 20); // more alternatives than tokens
    EXPECT_TRUE(std::isfinite(p.chosen));
    EXPECT_LT(p.chosen, 0.0f);
    ASSERT_EQ(p.top.size(), 3u);
    EXPECT_EQ(p.top[2].first, 1);
    EXPECT_TRUE(std::isinf(p.top[2].second));
    EXPECT_TRUE(position_logprobs(logits, 0, 0).top.empty());
}
