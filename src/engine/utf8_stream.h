#pragma once
// Turns a stream of token pieces (arbitrary bytes, possibly splitting a code point across
// tokens) into text that is always complete, valid UTF-8: a code point is released only
// when all of its bytes have arrived; bytes that can never form one become U+FFFD.
#include <string>
#include <string_view>

namespace specd::engine {

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

} // namespace specd::engine
