#include "cli/multiline_input.h"

#include <gtest/gtest.h>

using namespace specd::cli;

TEST(MultilineInput, ABlockEndsOnTheLineEndingWithQuotes) {
    MultilineInput in;
    EXPECT_FALSE(in.open(MultilineInput::Kind::prompt, ""));
    EXPECT_TRUE(in.active());
    EXPECT_FALSE(in.add("line one"));
    EXPECT_FALSE(in.add(""));
    const auto text = in.add(R"(line two""")");
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "line one\n\nline two");
    EXPECT_FALSE(in.active());
}

TEST(MultilineInput, TextBesideTheQuotesCounts) {
    MultilineInput in;
    EXPECT_FALSE(in.open(MultilineInput::Kind::system, "You are"));
    EXPECT_EQ(in.kind(), MultilineInput::Kind::system);
    const auto text = in.add(R"(""")");
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "You are");
    // Opened and closed on one line.
    const auto one = in.open(MultilineInput::Kind::prompt, R"(all at once""")");
    ASSERT_TRUE(one);
    EXPECT_EQ(*one, "all at once");
    EXPECT_FALSE(in.active());
}

TEST(MultilineInput, CancelDropsTheBlock) {
    MultilineInput in;
    in.open(MultilineInput::Kind::prompt, "half");
    in.cancel();
    EXPECT_FALSE(in.active());
    const auto text = in.open(MultilineInput::Kind::prompt, R"(fresh""")");
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, "fresh");
}
