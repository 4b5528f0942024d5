#include "cli/word_wrap.h"

namespace specd::cli {

int text_columns(std::string_view text) {
    int n = 0;
    for (unsigned char c : text) n += (c & 0xC0) != 0x80; // continuation bytes add nothing
    return n;
}

void WordWrap::advance(int columns) {
    column_ += columns;
    // Past the edge the terminal itself continues on the next line.
    while (column_ > width_) column_ -= width_;
}

std::string WordWrap::place_word() {
    std::string out;
    const int   len = text_columns(word_);
    if (len > 0 && column_ > 0 && column_ + len > width_) {
        out += '\n';
        column_ = 0;
    }
    out += word_;
    advance(len);
    word_.clear();
    return out;
}

std::string WordWrap::feed(std::string_view text) {
    if (width_ <= 0) return std::string(text);
    std::string out;
    for (char c : text) {
        if (c == '\n') {
            out += place_word();
            out += '\n';
            column_ = 0;
        } else if (c == ' ') {
            out += place_word();
            if (column_ >= width_) { // the line is full: the space would start the next one
                out += '\n';
                column_ = 0;
            } else {
                out += ' ';
                advance(1);
            }
        } else {
            word_ += c;
        }
    }
    return out;
}

std::string WordWrap::flush() { return width_ <= 0 ? std::string() : place_word(); }

} // namespace specd::cli
