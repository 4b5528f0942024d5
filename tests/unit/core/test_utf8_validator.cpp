#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using specd::Utf8Validator;

namespace {

bool valid(const std::vector<std::string> & pieces) {
    Utf8Validator v;
    for (const auto & p : pieces) {
        if (!v.accepts(p)) return false;
        v.feed(p);
    }
    return !v.mid_character();
}

} // namespace

TEST(Utf8Validator, AcceptsValidTextSplitAnywhere) {
    EXPECT_TRUE(valid({"plain ascii"}));
    EXPECT_TRUE(valid({"h\xC3\xA9llo"}));                       // é
    EXPECT_TRUE(valid({"\xE2", "\x82", "\xAC"}));               // € one byte per token
    EXPECT_TRUE(valid({"\xF0\x9F", "\x98\x80"}));               // U+1F600 split in two
    EXPECT_TRUE(valid({"\xED\x9F\xBF"}));                       // U+D7FF, just below the surrogates
    EXPECT_TRUE(valid({"\xEE\x80\x80"}));                       // U+E000, just above them
    EXPECT_TRUE(valid({"\xF4\x8F\xBF\xBF"}));                   // U+10FFFF
}

TEST(Utf8Validator, RefusesWhatLlamaCppsGrammarReadsLeniently) {
    const std::vector<std::vector<std::string>> bad = {
        {"\xED\xA0\x80"},     // encoded surrogate U+D800
        {"\xED", "\xBF\xBF"}, // surrogate U+DFFF, split
        {"\xC1\x81"},         // overlong 'A'
        {"\xC0\x80"},         // overlong NUL
        {"\xE0\x80\x80"},     // overlong 3-byte
        {"\xF0\x80\x80\x80"}, // overlong 4-byte
        {"\xF4\x90\x80\x80"}, // above U+10FFFF
        {"\xF5\x80\x80\x80"}, // lead byte past U+10FFFF
        {"\x80"},             // lone continuation
        {"\xC3", "A"},        // lead byte, then no continuation
    };
    for (const auto & pieces : bad) {
        Utf8Validator v;
        bool          ok = true;
        for (const auto & p : pieces) ok = ok && v.feed(p);
        EXPECT_FALSE(ok) << testing::PrintToString(pieces);
    }
    Utf8Validator v;
    ASSERT_TRUE(v.feed("\xE2"));
    EXPECT_TRUE(v.mid_character());
    EXPECT_FALSE(v.accepts("x"));
    EXPECT_TRUE(v.accepts("\x82\xAC"));
    EXPECT_TRUE(v.mid_character()); // accepts() did not advance
}
