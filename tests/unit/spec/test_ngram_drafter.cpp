#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

using namespace specd::spec;

TEST(NgramDrafter, ProposesWhatFollowedTheLastOccurrence) {
    NgramDrafter d;
    // ... 7 8 9 [10 11] ... 7 8 9 -> 10 11
    const std::vector<token_id> h = {1, 7, 8, 9, 10, 11, 12, 5, 7, 8, 9};
    EXPECT_EQ(d.propose(h, 2), (std::vector<token_id>{10, 11}));
    EXPECT_EQ(d.propose(h, 10), (std::vector<token_id>{10, 11, 12, 5, 7, 8, 9}));
}

TEST(NgramDrafter, PrefersTheMostRecentAndLongestMatch) {
    NgramDrafter d;
    const std::vector<token_id> h = {3, 4, 100, 9, 3, 4, 200, 9, 3, 4};
    EXPECT_EQ(d.propose(h, 1), (std::vector<token_id>{200}));
}

TEST(NgramDrafter, NothingWithoutARepeat) {
    NgramDrafter d;
    EXPECT_TRUE(d.propose(std::vector<token_id>{1, 2, 3, 4, 5}, 4).empty());
    EXPECT_TRUE(d.propose(std::vector<token_id>{}, 4).empty());
    EXPECT_TRUE(d.propose(std::vector<token_id>{1, 2, 1, 2}, 0).empty());
}

TEST(NgramDrafter, RepeatingRunContinues) {
    NgramDrafter d;
    EXPECT_EQ(d.propose(std::vector<token_id>{5, 5, 5, 5}, 3), (std::vector<token_id>{5}));
}
