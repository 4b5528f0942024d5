#include "templates/go_template_lexer.h"

#include "core/error.h"
#include "core/utf8.h"

#include <charconv>
#include <cmath>

namespace specd::templates {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Go accepts Unicode letters and digits in names; any non-ASCII byte counts as one here.
bool is_alnum(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x80 || c == '_' || is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}


// Length of the UTF-8 sequence starting at s[0] and its code point; 1 and the byte for a
// byte that does not start a valid sequence.
size_t rune_at(std::string_view s, uint32_t & cp) {
    const Utf8Char c = decode_utf8(s);
    if (c.len == 0) {
        cp = static_cast<unsigned char>(s[0]);
        return 1;
    }
    cp = c.cp;
    return c.len;
}

std::string quote_char(char c) {
    if (c == '"') return "'\"'";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F || static_cast<unsigned char>(c) >= 0x80) {
        static const char * hex = "0123456789abcdef";
        const auto u = static_cast<unsigned char>(c);
        return std::string("byte 0x") + hex[u >> 4] + hex[u & 0xF];
    }
    return std::string("\"") + c + "\"";
}

// A Go escape sequence after the backslash at s[p]; appends the decoded bytes to out and
// returns the position after it, or npos when it is not valid.
size_t decode_escape(std::string_view s, size_t p, char quote, std::string & out) {
    if (p + 1 >= s.size()) return std::string_view::npos;
    const char e = s[p + 1];
    switch (e) {
        case 'a': out += '\a'; return p + 2;
        case 'b': out += '\b'; return p + 2;
        case 'f': out += '\f'; return p + 2;
        case 'n': out += '\n'; return p + 2;
        case 'r': out += '\r'; return p + 2;
        case 't': out += '\t'; return p + 2;
        case 'v': out += '\v'; return p + 2;
        case '\\': out += '\\'; return p + 2;
        case '"':
        case '\'':
            if (e != quote) return std::string_view::npos;
            out += e;
            return p + 2;
        case 'x':
        case 'u':
        case 'U': {
            const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (p + 2 + n > s.size()) return std::string_view::npos;
            uint32_t v = 0;
            for (size_t i = 0; i < n; ++i) {
                const int h = hex_value(s[p + 2 + i]);
                if (h < 0) return std::string_view::npos;
                v = v * 16 + static_cast<uint32_t>(h);
            }
            if (e == 'x') {
                out += static_cast<char>(v); // a byte, as in Go
            } else {
                if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return std::string_view::npos;
                append_utf8(out, v);
            }
            return p + 2 + n;
        }
        default:
            if (e >= '0' && e <= '7') {
                if (p + 4 > s.size()) return std::string_view::npos;
                uint32_t v = 0;
                for (size_t i = 1; i <= 3; ++i) {
                    const char d = s[p + i];
                    if (d < '0' || d > '7') return std::string_view::npos;
                    v = v * 8 + static_cast<uint32_t>(d - '0');
                }
                if (v > 255) return std::string_view::npos;
                out += static_cast<char>(v);
                return p + 4;
            }
            return std::string_view::npos;
    }
}

Token tok(TokenKind kind, size_t pos, std::string_view text = {}, bool space_before = false) {
    Token t;
    t.kind         = kind;
    t.pos          = pos;
    t.text         = text;
    t.space_before = space_before;
    return t;
}

} // namespace

std::string describe_position(std::string_view source, size_t pos) {
    if (pos > source.size()) pos = source.size();
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos; ++i) {
        if (source[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(pos - line_start + 1);
}

void Lexer::fail(size_t pos, const std::string & what) const {
    throw bad_request("invalid template: " + describe_position(src_, pos) + ": " + what);
}

Token Lexer::next() {
    if (in_action_) return lex_action();
    return lex_text();
}

// Text up to the next action. A `{{- ` trims the text before it, a ` -}}` the text after
// it; a comment action is consumed here, trimming as any action does.
Token Lexer::lex_text() {
    for (;;) {
        if (trim_next_) {
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
            trim_next_ = false;
        }
        const size_t start = pos_;
        if (start >= src_.size()) return tok(TokenKind::eof, src_.size(), {});

        const size_t found = src_.find("{{", start);
        if (found == std::string_view::npos) {
            pos_ = src_.size();
            return tok(TokenKind::text, start, src_.substr(start));
        }
        const bool left_trim = found + 3 < src_.size() && src_[found + 2] == '-' && is_space(src_[found + 3]);
        size_t     text_end  = found;
        if (left_trim) {
            while (text_end > start && is_space(src_[text_end - 1])) --text_end;
        }
        const size_t after = found + 2 + (left_trim ? 2 : 0);

        if (src_.compare(after, 2, "/*") == 0) {
            const size_t close = src_.find("*/", after + 2);
            if (close == std::string_view::npos) fail(found, "unclosed comment");
            size_t end = close + 2;
            bool   right_trim = false;
            if (src_.compare(end, 2, "}}") == 0) {
                end += 2;
            } else if (end + 3 < src_.size() && is_space(src_[end]) && src_[end + 1] == '-' &&
                       src_.compare(end + 2, 2, "}}") == 0) {
                end += 4;
                right_trim = true;
            } else {
                fail(found, "comment ends before closing delimiter");
            }
            pos_       = end;
            trim_next_ = right_trim;
            if (text_end > start) return tok(TokenKind::text, start, src_.substr(start, text_end - start));
            continue;
        }

        if (text_end > start) {
            pos_ = found; // the delimiter comes next
            return tok(TokenKind::text, start, src_.substr(start, text_end - start));
        }
        pos_          = after;
        in_action_    = true;
        action_start_ = found;
        return tok(TokenKind::left_delim, found, src_.substr(found, after - found));
    }
}

bool Lexer::at_terminator(size_t p) const {
    if (p >= src_.size()) return true;
    const char c = src_[p];
    if (is_space(c)) return true;
    switch (c) {
        case '.': case ',': case '|': case ':': case ')': case '(':
            return true;
        default:
            return src_.compare(p, 2, "}}") == 0;
    }
}

Token Lexer::lex_action() {
    bool space = false;
    for (;;) {
        if (pos_ >= src_.size()) fail(action_start_, "unclosed action");
        const char c = src_[pos_];
        if (!is_space(c)) break;
        if (pos_ + 3 < src_.size() && src_[pos_ + 1] == '-' && src_.compare(pos_ + 2, 2, "}}") == 0) {
            Token t = tok(TokenKind::right_delim, pos_, src_.substr(pos_, 4), true);
            pos_ += 4;
            in_action_ = false;
            trim_next_ = true;
            return t;
        }
        space = true;
        ++pos_;
    }
    const size_t start = pos_;
    auto simple = [&](TokenKind kind, size_t len) {
        Token t = tok(kind, start, src_.substr(start, len), space);
        pos_ += len;
        return t;
    };
    if (src_.compare(pos_, 2, "}}") == 0) {
        in_action_ = false;
        return simple(TokenKind::right_delim, 2);
    }
    Token t;
    const char c = src_[pos_];
    switch (c) {
        case '|': return simple(TokenKind::pipe, 1);
        case '(': return simple(TokenKind::left_paren, 1);
        case ')': return simple(TokenKind::right_paren, 1);
        case ',': return simple(TokenKind::comma, 1);
        case '=': return simple(TokenKind::assign, 1);
        case ':':
            if (src_.compare(pos_, 2, ":=") != 0) fail(pos_, "expected :=");
            return simple(TokenKind::declare, 2);
        case '"': t = lex_quoted(start); break;
        case '`': t = lex_raw(start); break;
        case '\'': t = lex_char(start); break;
        case '$': t = lex_word(start, TokenKind::variable); break;
        case '.':
            if (pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])) {
                t = lex_number(start);
            } else {
                t = lex_word(start, TokenKind::field);
            }
            break;
        default:
            if (c == '+' || c == '-' || is_digit(c)) {
                t = lex_number(start);
            } else if (is_alnum(c)) {
                t = lex_word(start, TokenKind::identifier);
            } else {
                fail(pos_, "unexpected " + quote_char(c) + " in action");
            }
    }
    t.space_before = space;
    return t;
}

// `$name`, `.Name` or `name`; a lone `$` is the root variable, a lone `.` is dot.
Token Lexer::lex_word(size_t start, TokenKind kind) {
    size_t p = start + (kind == TokenKind::identifier ? 0 : 1);
    while (p < src_.size() && is_alnum(src_[p])) ++p;
    if (!at_terminator(p)) fail(p, "bad character " + quote_char(src_[p]));
    pos_ = p;
    const std::string_view word = src_.substr(start, p - start);
    Token t = tok(kind, start, word);
    if (kind == TokenKind::field && word.size() == 1) {
        t.kind = TokenKind::dot;
    } else if (kind == TokenKind::identifier) {
        static const struct { std::string_view word; TokenKind kind; } keywords[] = {
            {"nil", TokenKind::kw_nil},           {"if", TokenKind::kw_if},
            {"else", TokenKind::kw_else},         {"end", TokenKind::kw_end},
            {"range", TokenKind::kw_range},       {"with", TokenKind::kw_with},
            {"break", TokenKind::kw_break},       {"continue", TokenKind::kw_continue},
            {"define", TokenKind::kw_define},     {"template", TokenKind::kw_template},
            {"block", TokenKind::kw_block},       {"true", TokenKind::boolean},
            {"false", TokenKind::boolean},
        };
        for (const auto & k : keywords) {
            if (word == k.word) t.kind = k.kind;
        }
    }
    return t;
}

// Go's number syntax: an optional sign, 0x / 0o / 0b prefixes, a leading 0 for octal,
// underscores between digits, fractions and exponents (p for hex floats). Complex numbers
// (a trailing i) are refused.
Token Lexer::lex_number(size_t start) {
    size_t p      = start;
    auto   accept = [&](std::string_view set) {
        if (p < src_.size() && set.find(src_[p]) != std::string_view::npos) {
            ++p;
            return true;
        }
        return false;
    };
    auto accept_run = [&](std::string_view set) {
        while (accept(set)) {}
    };
    accept("+-");
    std::string_view digits = "0123456789_";
    bool             hex    = false;
    if (accept("0")) {
        if (accept("xX")) {
            digits = "0123456789abcdefABCDEF_";
            hex    = true;
        } else if (accept("oO")) {
            digits = "01234567_";
        } else if (accept("bB")) {
            digits = "01_";
        }
    }
    accept_run(digits);
    if (accept(".")) accept_run(digits);
    if (digits.size() == 11 && accept("eE")) {
        accept("+-");
        accept_run("0123456789_");
    }
    if (hex && accept("pP")) {
        accept("+-");
        accept_run("0123456789_");
    }
    const bool complex = accept("i");
    if (p < src_.size() && is_alnum(src_[p])) fail(start, "bad number syntax: \"" + std::string(src_.substr(start, p + 1 - start)) + "\"");
    pos_ = p;
    const std::string_view text = src_.substr(start, p - start);
    if (complex) fail(start, "complex numbers are not supported: \"" + std::string(text) + "\"");

    std::string s;
    for (char ch : text) {
        if (ch != '_') s += ch;
    }
    bool neg = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        neg = s[0] == '-';
        s.erase(0, 1);
    }
    Token t = tok(TokenKind::number, start, text);
    const auto bad = [&]() { fail(start, "illegal number syntax: \"" + std::string(text) + "\""); };
    if (s.empty()) bad();

    int         base = 10;
    std::string body = s;
    if (s.size() > 1 && s[0] == '0') {
        const char k = s[1];
        if (k == 'x' || k == 'X') { base = 16; body = s.substr(2); }
        else if (k == 'o' || k == 'O') { base = 8; body = s.substr(2); }
        else if (k == 'b' || k == 'B') { base = 2; body = s.substr(2); }
        else if (is_digit(k)) { base = 8; body = s.substr(1); }
    }
    const bool is_float = base == 16 ? body.find_first_of(".pP") != std::string::npos
                                     : body.find_first_of(".eE") != std::string::npos;
    if (!is_float) {
        uint64_t u = 0;
        const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), u, base);
        if (body.empty() || end != body.data() + body.size()) bad();
        if (ec == std::errc::result_out_of_range || u > (neg ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX))) {
            fail(start, "integer overflow: \"" + std::string(text) + "\"");
        }
        t.is_int  = true;
        t.int_val = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
        t.float_val = static_cast<double>(t.int_val);
        return t;
    }
    if (base == 8 && is_digit(s[1])) body = s; // "01.5e3" is a decimal float
    else if (base != 10 && base != 16) bad();
    double     v   = 0;
    const auto fmt = base == 16 ? std::chars_format::hex : std::chars_format::general;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, fmt);
    if (body.empty() || end != body.data() + body.size() || ec != std::errc() || !std::isfinite(v)) bad();
    t.float_val = neg ? -v : v;
    return t;
}

Token Lexer::lex_quoted(size_t start) {
    Token t = tok(TokenKind::string, start);
    size_t p = start + 1;
    for (;;) {
        if (p >= src_.size() || src_[p] == '\n') fail(start, "unterminated quoted string");
        const char c = src_[p];
        if (c == '"') break;
        if (c == '\\') {
            const size_t next = decode_escape(src_, p, '"', t.str);
            if (next == std::string_view::npos) fail(p, "invalid escape in quoted string");
            p = next;
            continue;
        }
        t.str += c;
        ++p;
    }
    pos_   = p + 1;
    t.text = src_.substr(start, pos_ - start);
    return t;
}

// Raw strings may span lines; Go drops their carriage returns.
Token Lexer::lex_raw(size_t start) {
    const size_t close = src_.find('`', start + 1);
    if (close == std::string_view::npos) fail(start, "unterminated raw quoted string");
    Token t = tok(TokenKind::string, start, src_.substr(start, close + 1 - start));
    for (size_t i = start + 1; i < close; ++i) {
        if (src_[i] != '\r') t.str += src_[i];
    }
    pos_ = close + 1;
    return t;
}

// A character constant is a number: its code point.
Token Lexer::lex_char(size_t start) {
    size_t      p = start + 1;
    std::string bytes;
    uint32_t    cp = 0;
    if (p >= src_.size() || src_[p] == '\n' || src_[p] == '\'') fail(start, "malformed character constant");
    if (src_[p] == '\\') {
        const char e = p + 1 < src_.size() ? src_[p + 1] : 0;
        p            = decode_escape(src_, p, '\'', bytes);
        if (p == std::string_view::npos) fail(start, "malformed character constant");
        if (e == 'x' || (e >= '0' && e <= '7')) {
            cp = static_cast<unsigned char>(bytes[0]);
        } else {
            rune_at(bytes, cp);
        }
    } else {
        p += rune_at(src_.substr(p), cp);
    }
    if (p >= src_.size() || src_[p] != '\'') fail(start, "malformed character constant");
    pos_ = p + 1;
    Token t = tok(TokenKind::number, start, src_.substr(start, pos_ - start));
    t.is_int    = true;
    t.int_val   = cp;
    t.float_val = cp;
    return t;
}

} // namespace specd::templates
