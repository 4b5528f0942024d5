#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

using specd::engine::StopMatcher;

namespace {

struct Fed {
    std::string text;
    bool        stopped = false;
};

Fed feed(StopMatcher & m, const std::vector<std::string> & pieces) {
    Fed out;
    for (const auto & p : pieces) {
        auto r = m.push(p);
        out.text += r.text;
        if (r.stopped) { out.stopped = true; return out; }
    }
    out.text += m.flush();
    return out;
}

} // namespace

TEST(StopMatcher, MatchesAcrossPieces) {
    StopMatcher m({"END"});
    auto r = feed(m, {"hello E", "N", "D world"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "hello ");
}

TEST(StopMatcher, HoldsBackOnlyPossiblePrefixes) {
    StopMatcher m({"END"});
    auto r1 = m.push("abcE");
    EXPECT_EQ(r1.text, "abc");
    auto r2 = m.push("x");
    EXPECT_EQ(r2.text, "Ex"); // the held "E" turned out not to start the stop string
    EXPECT_FALSE(r2.stopped);
}

TEST(StopMatcher, NoStopReleasesEverything) {
    StopMatcher m({"###"});
    auto r = feed(m, {"a#", "b##"});
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.text, "a#b##");
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
    StopMatcher m({"world", "lo w"});
    auto r = feed(m, {"hello world"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "hel");
}

TEST(StopMatcher, StopAtVeryStart) {
    StopMatcher m({"\n"});
    auto r = feed(m, {"\nrest"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "");
}

TEST(StopMatcher, EmptyStopStringsAreIgnored) {
    StopMatcher m({""});
    auto r = feed(m, {"abc"});
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(r.text, "abc");
}
