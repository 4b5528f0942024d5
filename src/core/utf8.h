#pragma once
// UTF-8, read one way everywhere: strictly, as RFC 3629 defines it (no overlong forms, no
// encoded surrogates, nothing past U+10FFFF). Callers choose what to do with bytes that are
// not UTF-8 (replace them, refuse them, wait for more), never how to read them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specd {

// The bytes of the character a byte starts: 1-4, or 0 for a byte no character starts with
// (a continuation byte, an overlong lead C0/C1, or F5-FF).
size_t utf8_sequence_length(unsigned char lead);

// Whether `c` may follow `lead` as its second byte (continuation bytes after E0, ED, F0 and
// F4 are narrowed to rule out overlong forms, surrogates and code points past U+10FFFF).
bool utf8_valid_second(unsigned char lead, unsigned char c);

struct Utf8Char {
    uint32_t cp  = 0;
    size_t   len = 0; // 0: `s` does not start with a complete, valid character
    // With len 0, how many of its first bytes could still begin one (0 for a byte that starts
    // none): all of `s` when it ends inside a character, else the maximal invalid prefix.
    size_t   prefix = 0;
};

// The first character of `s`.
Utf8Char decode_utf8(std::string_view s);

// UTF-8 encoding of one code point, shared by everything that builds text from code points
// (regex ranges, template literals, printf's %c). The caller passes a valid scalar value:
// what to do with surrogates or values past U+10FFFF is its own decision.
void append_utf8(std::string & out, uint32_t cp);

// Turns a stream of token pieces (arbitrary bytes, possibly splitting a code point across
// tokens) into text that is always complete, valid UTF-8: a code point is released only
// when all of its bytes have arrived; bytes that can never form one become U+FFFD (one per
// maximal invalid prefix).
class Utf8Stream {
  public:
    // Appends bytes and returns the text that is now complete.
    std::string push(std::string_view bytes);
    // Ends the stream: an unfinished sequence becomes U+FFFD.
    std::string flush();

  private:
    std::string pending_; // an incomplete but so far valid sequence (at most 3 bytes)
};

// Replaces every invalid sequence in `bytes` with U+FFFD.
std::string sanitize_utf8(std::string_view bytes);

// Whether a byte stream that tokens split anywhere stays valid UTF-8, byte by byte. The
// grammar constraint uses it: llama.cpp's grammar decodes bytes leniently (it reads an
// encoded surrogate ED A0 80 or an overlong C1 81 as one character), while the server turns
// such bytes into U+FFFD, which changes a string's length after the grammar counted it (a
// maxLength answer comes out longer); so it also refuses tokens that would make the answer
// invalid UTF-8.
class Utf8Validator {
  public:
    // Whether `bytes` may follow what was fed so far (does not advance).
    bool accepts(std::string_view bytes) const {
        Utf8Validator copy = *this;
        return copy.feed(bytes);
    }

    // Advances over `bytes`; false (and an unspecified state) when they are not valid here.
    bool feed(std::string_view bytes);

    // True between the bytes of one character.
    bool mid_character() const { return need_ > 0; }

  private:
    uint8_t need_ = 0; // continuation bytes still expected
    uint8_t lead_ = 0; // the character's first byte, while its second is expected
};

} // namespace specd
