#pragma once
// Strict UTF-8 (RFC 3629) over a byte stream that tokens split anywhere. llama.cpp's grammar
// decodes bytes leniently: it reads an encoded surrogate (ED A0 80) or an overlong form
// (C1 81) as one character. The server must turn such bytes into U+FFFD, which changes a
// string's length after the grammar counted it (a maxLength answer comes out longer). The
// constraint therefore also refuses tokens that would make the answer invalid UTF-8.
#include <cstdint>
#include <string_view>

namespace specd::grammar {

class Utf8Validator {
  public:
    // Whether `bytes` may follow what was fed so far (does not advance).
    bool accepts(std::string_view bytes) const {
        Utf8Validator copy = *this;
        return copy.feed(bytes);
    }

    // Advances over `bytes`; false (and an unspecified state) when they are not valid here.
    bool feed(std::string_view bytes) {
        for (const char ch : bytes) {
            const auto c = static_cast<uint8_t>(ch);
            if (need_ > 0) {
                if (c < lo_ || c > hi_) return false;
                --need_;
                lo_ = 0x80;
                hi_ = 0xBF;
                continue;
            }
            if (c < 0x80) continue;
            if (c < 0xC2 || c > 0xF4) return false; // continuation, overlong lead, above U+10FFFF
            need_ = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
            // The second byte's range excludes overlongs, surrogates and code points past U+10FFFF.
            lo_ = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
            hi_ = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        }
        return true;
    }

    // True between the bytes of one character.
    bool mid_character() const { return need_ > 0; }

  private:
    uint8_t need_ = 0;    // continuation bytes still expected
    uint8_t lo_   = 0x80; // range of the next continuation byte
    uint8_t hi_   = 0xBF;
};

} // namespace specd::grammar
