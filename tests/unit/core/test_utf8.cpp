// The one UTF-8 reader: decode_utf8 against the streaming validator and the encoder on every
// sequence of up to three bytes and a sweep of four-byte ones, so the readers that build on it
// (templates, grammar, the answer's stream) all draw the same line between valid and not.
#include "core/utf8.h"

#include <gtest/gtest.h>

#include <string>

using namespace specd;

namespace {

// Whether `s` is exactly one character as RFC 3629 defines it (checked by its code point:
// the shortest form, not a surrogate, at most U+10FFFF).
bool one_rfc3629_character(const std::string & s, uint32_t & cp) {
    const auto b0 = static_cast<unsigned char>(s[0]);
    size_t     n  = b0 < 0x80 ? 1 : (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || n != s.size()) return false;
    cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (size_t i = 1; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if ((c & 0xC0) != 0x80) return false;
        cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t min = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    return cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

// Whether `s` is a run of such characters.
bool rfc3629_text(const std::string & s) {
    for (size_t i = 0; i < s.size();) {
        const auto b0 = static_cast<unsigned char>(s[i]);
        const size_t n = b0 < 0x80 ? 1 : (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : (b0 & 0xF8) == 0xF0 ? 4 : 0;
        uint32_t cp = 0;
        if (n == 0 || !one_rfc3629_character(s.substr(i, n), cp)) return false;
        i += n;
    }
    return true;
}

void check(const std::string & s) {
    uint32_t   want_cp = 0;
    const bool want    = one_rfc3629_character(s, want_cp);
    const Utf8Char c   = decode_utf8(s);
    ASSERT_EQ(c.len == s.size(), want) << std::hex << int(static_cast<unsigned char>(s[0])) << " len " << s.size();
    Utf8Validator v;
    ASSERT_EQ(v.feed(s) && !v.mid_character(), rfc3629_text(s)) << std::hex << int(static_cast<unsigned char>(s[0]));
    if (!want) return;
    ASSERT_EQ(c.cp, want_cp);
    std::string again;
    append_utf8(again, c.cp);
    ASSERT_EQ(again, s);
    ASSERT_EQ(utf8_sequence_length(static_cast<unsigned char>(s[0])), s.size());
}

} // namespace

TEST(Utf8, DecodeAgreesWithRfc3629OnShortSequences) {
    for (int a = 0; a < 256; ++a) {
        check(std::string(1, char(a)));
        for (int b = 0; b < 256; ++b) {
            check(std::string{char(a), char(b)});
            for (int c = 0x70; c < 0xC8; ++c) check(std::string{char(a), char(b), char(c)});
        }
    }
}

TEST(Utf8, DecodeAgreesWithRfc3629OnFourByteSequences) {
    for (int a = 0xE8; a < 0x100; ++a) {
        for (int b = 0x70; b < 0xC8; ++b) {
            for (int c : {0x7F, 0x80, 0xA5, 0xBF, 0xC0}) {
                for (int d : {0x7F, 0x80, 0x9A, 0xBF, 0xC0}) check(std::string{char(a), char(b), char(c), char(d)});
            }
        }
    }
}

TEST(Utf8, DecodeReadsOnlyTheFirstCharacter) {
    const Utf8Char c = decode_utf8("\xC3\xA9tait");
    EXPECT_EQ(c.cp, 0xE9u);
    EXPECT_EQ(c.len, 2u);
    EXPECT_EQ(decode_utf8("").len, 0u);
    EXPECT_EQ(decode_utf8("\xE2\x82").len, 0u); // incomplete: both bytes could still begin one
    EXPECT_EQ(decode_utf8("\xE2\x82").prefix, 2u);
    EXPECT_EQ(decode_utf8("\xE2\x82\x41").prefix, 2u); // the maximal invalid prefix
    EXPECT_EQ(decode_utf8("\xED\xA0\x80").prefix, 1u); // a surrogate: only its lead
    EXPECT_EQ(decode_utf8("\x80").prefix, 0u);           // starts none
}
