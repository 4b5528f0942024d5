#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

using namespace specd::spec;

TEST(NgramDrafter, ProposesWhatFollowedTheLastOccurrence) {
    NgramDrafter d;
    // ... 7 8 9 [10 11] ... 7 8 9 -> 10 11
    const std::vector<token_id> h = {1, 7, 8, 9, 10, 11, 12, 5, 7, 8, 9};
    EXPECT_EQ(d.lookup(h, 2), (std::vector<token_id>{10, 11}));
    EXPECT_EQ(d.lookup(h, 10), (std::vector<token_id>{10, 11, 12, 5, 7, 8, 9}));
}

TEST(NgramDrafter, PrefersTheMostRecentAndLongestMatch) {
    NgramDrafter d;
    const std::vector<token_id> h = {3, 4, 100, 9, 3, 4, 200, 9, 3, 4};
    EXPECT_EQ(d.lookup(h, 1), (std::vector<token_id>{200}));
}

TEST(NgramDrafter, NothingWithoutARepeat) {
    NgramDrafter d;
    EXPECT_TRUE(d.lookup(std::vector<token_id>{1, 2, 3, 4, 5}, 4).empty());
    EXPECT_TRUE(d.lookup(std::vector<token_id>{}, 4).empty());
    EXPECT_TRUE(d.lookup(std::vector<token_id>{1, 2, 1, 2}, 0).empty());
}

TEST(NgramDrafter, RepeatingRunContinues) {
    NgramDrafter d;
    EXPECT_EQ(d.lookup(std::vector<token_id>{5, 5, 5, 5}, 3), (std::vector<token_id>{5}));
}

TEST(NgramDrafter, ProposalsArePointMasses) {
    NgramDrafter                d;
    const std::vector<token_id> history{1, 2, 3, 1, 2};
    const auto                  p = d.propose({.history = history, .k = 2});
    ASSERT_EQ(p.tokens, (std::vector<token_id>{3, 1}));
    ASSERT_EQ(p.dists.size(), 2u);
    EXPECT_FLOAT_EQ(p.dists[0].prob_of(3), 1.0f);
    EXPECT_FLOAT_EQ(p.dists[1].prob_of(1), 1.0f);
}
