#include "core/base64.h"

#include <gtest/gtest.h>

#include <string>

using specd::base64_decoded_size;
using specd::decode_base64;
using specd::encode_base64;

namespace {

std::vector<uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

} // namespace

TEST(Base64, DecodesValidText) {
    struct Case { const char * text; std::string_view bytes; };
    const Case cases[] = {
        {"", ""},
        {"Zg==", "f"}, {"Zm8=", "fo"}, {"Zm9v", "foo"}, {"Zm9vYg==", "foob"}, {"Zm9vYmE=", "fooba"},
        {"Zm9vYmFy", "foobar"},                                       // RFC 4648 section 10
        {"Zg", "f"}, {"Zm8", "fo"}, {"Zm9vYg", "foob"},              // padding left out
        {"Zm9v\r\nYmFy\n", "foobar"},                                 // line breaks skipped
        {"+/+/", "\xfb\xff\xbf"},                                     // the last two letters
        {"AAEC/w==", std::string_view("\x00\x01\x02\xff", 4)},
        {"Zh==", "f"},                                                // non-zero spare bits, as Go accepts
    };
    for (const auto & c : cases) {
        const auto out = decode_base64(c.text);
        ASSERT_TRUE(out.has_value()) << c.text;
        EXPECT_EQ(*out, bytes_of(c.bytes)) << c.text;
        EXPECT_EQ(base64_decoded_size(c.text), c.bytes.size()) << c.text;
    }
}

TEST(Base64, RejectsInvalidText) {
    for (const char * text : {
             "Z",          // one character over: 6 bits are not a byte
             "Zm9vY",      // the same after a full group
             "Zg=",        // padding short
             "Zg===",      // padding long
             "Zm9v====",   // padding after a complete group
             "Zm8==",      // too much padding for three characters
             "Z===",       // padding for a single character
             "=",          // padding alone
             "Zg==Zg==",   // data after padding
             "Zm9v YmFy",  // blank
             "Zm9v\tYmFy", // tab
             "Zm9-",       // URL-safe alphabet
             "Zm9_",
             "Zm9v!",
             "data:image/png;base64,Zm9v",
             "Zm9v\xc3\xa9", // non-ASCII
         }) {
        EXPECT_FALSE(decode_base64(text).has_value()) << text;
    }
    EXPECT_FALSE(decode_base64(std::string_view("Zm\0v", 4)).has_value()); // NUL inside
}

TEST(Base64, EncodesAndRoundTrips) {
    EXPECT_EQ(encode_base64(bytes_of("")), "");
    EXPECT_EQ(encode_base64(bytes_of("f")), "Zg==");
    EXPECT_EQ(encode_base64(bytes_of("fo")), "Zm8=");
    EXPECT_EQ(encode_base64(bytes_of("foobar")), "Zm9vYmFy");
    std::vector<uint8_t> all(256 * 3 + 1);
    for (size_t i = 0; i < all.size(); ++i) {
        all[i] = uint8_t(i * 7 + (i >> 8));
    }
    for (size_t n = 0; n <= all.size(); n += 37) {
        const std::vector<uint8_t> bytes(all.begin(), all.begin() + n);
        const std::string text = encode_base64(bytes);
        EXPECT_EQ(decode_base64(text), bytes) << n;
        EXPECT_EQ(base64_decoded_size(text), n) << n;
    }
}
