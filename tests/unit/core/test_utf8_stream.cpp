#include "core/utf8.h"

#include <gtest/gtest.h>

using specd::sanitize_utf8;
using specd::Utf8Stream;

namespace {
const std::string fffd = "\xEF\xBF\xBD";
}

TEST(Utf8Stream, HoldsASplitCodePointUntilComplete) {
    Utf8Stream s;
    const std::string euro = "\xE2\x82\xAC"; // U+20AC, three bytes
    EXPECT_EQ(s.push("a\xE2"), "a");
    EXPECT_EQ(s.push("\x82"), "");
    EXPECT_EQ(s.push("\xAC" "b"), euro + "b");
    EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, FourByteSequenceAcrossFourPushes) {
    Utf8Stream s;
    std::string out;
    for (char c : std::string("\xF0\x9F\x98\x80")) out += s.push(std::string(1, c));
    EXPECT_EQ(out, "\xF0\x9F\x98\x80");
}

TEST(Utf8Stream, InvalidBytesBecomeReplacement) {
    Utf8Stream s;
    EXPECT_EQ(s.push("a\xFF" "b"), "a" + fffd + "b");
    EXPECT_EQ(s.push("\xC0\xAF"), fffd + fffd);          // overlong lead bytes are never valid
    EXPECT_EQ(s.push("\xED\xA0\x80"), fffd + fffd + fffd); // surrogate: bad 2nd byte, then 2 stray
    EXPECT_EQ(s.push("\xE2\x28"), fffd + "(");
}

TEST(Utf8Stream, UnfinishedSequenceAtEndIsReplaced) {
    Utf8Stream s;
    EXPECT_EQ(s.push("x\xE2\x82"), "x");
    EXPECT_EQ(s.flush(), fffd);
    EXPECT_EQ(s.flush(), "");
}

TEST(Utf8Stream, SanitizeKeepsValidText) {
    EXPECT_EQ(sanitize_utf8("héllo €"), "héllo €");
    EXPECT_EQ(sanitize_utf8("\xE2\x82"), fffd);
    EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}
