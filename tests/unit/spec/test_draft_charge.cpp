#include "spec/draft_charge.h"

#include <gtest/gtest.h>

#include <vector>

using specd::spec::DraftCharge;

namespace {

std::vector<double> charge(DraftCharge & c, int generating, std::vector<size_t> tokens, double seconds) {
    return c.charge(generating, tokens, seconds);
}

// A draft decode of `rows` tokens: a fixed part and a part per token (the shape the 4-stream
// measurements of gemma4's assistant had: 6.6 ms fixed, 1.7 ms a token).
double decode_s(size_t rows) { return 0.0066 + 0.0017 * double(rows); }

} // namespace

// Alone, a round pays what its drafting took.
TEST(DraftCharge, AloneARoundPaysItsWholeTime) {
    DraftCharge c;
    const auto out = charge(c, 1, {3}, 3 * decode_s(1));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_DOUBLE_EQ(out[0], 3 * decode_s(1));
    EXPECT_NEAR(c.together(1), decode_s(1), 1e-12);
}

// Until a step in which every round drafted was measured, each round pays its share of the
// tokens.
TEST(DraftCharge, SharesByTokensUntilTheBatchDraftedTogether) {
    DraftCharge c;
    const auto out = charge(c, 4, {1, 3}, 0.040);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_DOUBLE_EQ(out[0], 0.010);
    EXPECT_DOUBLE_EQ(out[1], 0.030);
    EXPECT_EQ(c.together(4), 0.0);
}

// Once four rounds drafted together, a round drafting alone in a batch of four pays what its
// token costs when they all draft, not the decode's fixed part in full.
TEST(DraftCharge, ALoneDraftInABatchPaysTheTogetherRate) {
    DraftCharge c;
    const double all = decode_s(4); // four rounds, one token each, one decode
    charge(c, 4, {1, 1, 1, 1}, all);
    EXPECT_NEAR(c.together(4), all / 4, 1e-12);

    const auto lone = charge(c, 4, {1}, decode_s(1));
    ASSERT_EQ(lone.size(), 1u);
    EXPECT_NEAR(lone[0], all / 4, 1e-12);
    EXPECT_LT(lone[0], decode_s(1) / 2); // the fixed part is not its alone
    // The lone step does not move the together rate: it did not measure it.
    EXPECT_NEAR(c.together(4), all / 4, 1e-12);
}

// The charge never exceeds the round's share of what the step took.
TEST(DraftCharge, NeverMoreThanItsShare) {
    DraftCharge c;
    charge(c, 2, {2, 2}, 0.040); // 10 ms a token together
    const auto out = charge(c, 2, {1}, 0.004);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_DOUBLE_EQ(out[0], 0.004);
}

// What a batch size measured is that size's: two rounds drafting together say nothing about
// four.
TEST(DraftCharge, EachBatchSizeMeasuresItsOwn) {
    DraftCharge c;
    charge(c, 2, {1, 1}, decode_s(2));
    EXPECT_GT(c.together(2), 0.0);
    EXPECT_EQ(c.together(4), 0.0);
    const auto out = charge(c, 4, {1, 1}, decode_s(2));
    EXPECT_DOUBLE_EQ(out[0], decode_s(2) / 2); // its share: batch 4 has no measurement
}

// The together rate follows the recent steps: older ones fade.
TEST(DraftCharge, TheTogetherRateFollowsRecentSteps) {
    DraftCharge c(0.5);
    charge(c, 2, {1, 1}, 0.020); // 10 ms a token
    for (int i = 0; i < 20; ++i) charge(c, 2, {1, 1}, 0.008); // 4 ms a token
    EXPECT_NEAR(c.together(2), 0.004, 1e-6);
}

// Rounds that asked and got no token share the time alike; a round that got none pays
// nothing beside one that drafted.
TEST(DraftCharge, RoundsWithoutTokens) {
    DraftCharge c;
    const auto none = charge(c, 2, {0, 0}, 0.010);
    EXPECT_DOUBLE_EQ(none[0], 0.005);
    EXPECT_DOUBLE_EQ(none[1], 0.005);
    const auto some = charge(c, 2, {0, 2}, 0.010);
    EXPECT_DOUBLE_EQ(some[0], 0.0);
    EXPECT_DOUBLE_EQ(some[1], 0.010);
    EXPECT_TRUE(charge(c, 2, {}, 0.010).empty());
}
