#pragma once
// Streamed text broken before a word that would cross the terminal's right edge, as Ollama's
// CLI does on a terminal: that word starts the next line. Only newlines are added (a space
// that would start a line becomes the newline), and a word is held until a space or newline ends it, so the wrap never
// splits one (a word longer than a line is left to the terminal).
#include <string>
#include <string_view>

namespace specd::cli {

class WordWrap {
  public:
    // width 0: no wrapping (text passes through unchanged).
    explicit WordWrap(int width) : width_(width) {}

    // The text that can be shown now (whole words and the spaces after them).
    std::string feed(std::string_view text);
    // The held word, at the end of the answer.
    std::string flush();

  private:
    std::string place_word();
    void        advance(int columns);

    int         width_;
    int         column_ = 0;
    std::string word_;
};

// Display columns of UTF-8 text, one per code point (wide characters are not measured).
int text_columns(std::string_view text);

} // namespace specd::cli
