#include "models/digest.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

using namespace specd::models;

namespace {

const std::string k_hex64 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

} // namespace

TEST(Digest, Validation) {
    struct Case {
        std::string text;
        bool        valid;
    };
    const Case cases[] = {
        {"sha256:" + k_hex64, true},
        {"sha256-" + k_hex64, true},
        {"sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", true},
        {"", false},
        {"sha256:", false},
        {"sha256:" + k_hex64.substr(1), false},        // 63 digits
        {"sha256:" + k_hex64 + "0", false},            // 65 digits
        {"sha512:" + k_hex64, false},
        {"SHA256:" + k_hex64, false},
        {"sha256_" + k_hex64, false},
        {"sha256:" + k_hex64.substr(0, 63) + "g", false},
        {" sha256:" + k_hex64, false},
        {"sha256:" + k_hex64 + "\n", false},
        {"sha256:../../../../../../etc/passwd" + std::string(36, 'a'), false},
        {"sha256:" + k_hex64.substr(0, 60) + "/../", false},
        {std::string("sha256:") + std::string(32, 'a') + std::string(1, '\0') + std::string(31, 'a'), false},
        {k_hex64, false},
    };
    const std::regex pattern("^sha256[:-][0-9a-fA-F]{64}$");
    for (const auto & c : cases) {
        EXPECT_EQ(is_valid_digest(c.text), c.valid) << c.text;
        EXPECT_EQ(std::regex_match(c.text, pattern), c.valid) << c.text;
        EXPECT_EQ(normalize_digest(c.text).has_value(), c.valid) << c.text;
        EXPECT_EQ(blob_filename(c.text).has_value(), c.valid) << c.text;
    }
}

TEST(Digest, NormalizeAndBlobFilename) {
    const std::string upper = "sha256-E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
    EXPECT_EQ(normalize_digest(upper), "sha256:" + k_hex64);
    EXPECT_EQ(blob_filename(upper), "sha256-" + k_hex64);
    EXPECT_EQ(blob_filename("sha256:" + k_hex64), "sha256-" + k_hex64);
    EXPECT_EQ(specd::sha256_digest(""), "sha256:" + k_hex64);
}

// The hand-written check agrees with Ollama's regex on valid digests mutated one byte at a
// time (and on truncations and extensions).
TEST(Digest, AgreesWithTheRegex) {
    const std::regex  pattern("^sha256[:-][0-9a-fA-F]{64}$");
    std::string       alphabet = "0123456789abcdefABCDEFgG:-/._\\ \n\xff";
    alphabet += '\0';
    std::mt19937      rng(7);
    for (int i = 0; i < 20000; ++i) {
        std::string s = (rng() % 2 ? "sha256:" : "sha256-") + std::string(64, 'a');
        for (size_t j = 7; j < s.size(); ++j) {
            s[j] = "0123456789abcdefABCDEF"[rng() % 22];
        }
        switch (rng() % 4) {
            case 0: s[rng() % s.size()] = alphabet[rng() % alphabet.size()]; break;
            case 1: s.resize(rng() % s.size()); break;
            case 2: s += alphabet[rng() % alphabet.size()]; break;
            default: break;
        }
        ASSERT_EQ(is_valid_digest(s), std::regex_match(s, pattern)) << s;
    }
}
