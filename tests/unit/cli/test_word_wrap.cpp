#include "cli/word_wrap.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace specd::cli;

namespace {

// Feeds `text` in pieces of `piece` bytes, as a stream arrives.
std::string wrap(int width, const std::string & text, size_t piece) {
    WordWrap    w(width);
    std::string out;
    for (size_t i = 0; i < text.size(); i += piece) out += w.feed(text.substr(i, piece));
    return out + w.flush();
}

// The words, one space between each: what wrapping must not change.
std::string words(const std::string & s) {
    std::istringstream in(s);
    std::string        out;
    for (std::string w; in >> w;) out += (out.empty() ? "" : " ") + w;
    return out;
}

} // namespace

TEST(WordWrap, BreaksBeforeAWordThatWouldCrossTheEdge) {
    EXPECT_EQ(wrap(10, "aaa bbb ccc ddd", 100), "aaa bbb \nccc ddd");
    EXPECT_EQ(wrap(10, "aaa bbb ccc ddd", 1), "aaa bbb \nccc ddd");
    // A word that exactly fills the line stays on it.
    EXPECT_EQ(wrap(7, "aaa bbb ccc", 1), "aaa bbb\nccc");
}

TEST(WordWrap, KeepsTheWordsAndEveryLineWithinTheWidth) {
    const std::string text = "the quick brown fox jumps over the lazy dog and keeps running\nnew line here too";
    for (int width : {8, 13, 20, 31}) {
        for (size_t piece : {1, 3, 7, 100}) {
            const std::string out = wrap(width, text, piece);
            EXPECT_EQ(words(out), words(text)) << width << "/" << piece;
            std::istringstream lines(out);
            for (std::string line; std::getline(lines, line);) {
                // a trailing space may sit on the edge; the words do not cross it
                while (!line.empty() && line.back() == ' ') line.pop_back();
                EXPECT_LE(text_columns(line), width) << "'" << line << "' at " << width << "/" << piece;
            }
        }
    }
}

TEST(WordWrap, LongWordsAndNoWidth) {
    // A word longer than the line is left to the terminal.
    EXPECT_EQ(wrap(4, "ab abcdefgh ij", 1), "ab \nabcdefgh\nij");
    EXPECT_EQ(wrap(0, "no wrap at all here", 2), "no wrap at all here");
    EXPECT_EQ(text_columns("héllo"), 5);
    EXPECT_EQ(wrap(6, "héllo wörld", 1), "héllo \nwörld");
}
