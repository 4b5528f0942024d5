#pragma once
// Tokens of Go's text/template syntax, produced on demand. Text between actions comes out
// already trimmed by `{{- ` / ` -}}`, and comments (`{{/* */}}`) produce nothing. Literals
// are decoded here (a string's escapes, a number's value), so the parser sees values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specd::templates {

enum class TokenKind {
    text,          // raw text between actions
    left_delim,    // {{
    right_delim,   // }}
    boolean,       // true, false
    number,        // 12, -1.5, 0x1F, 'a'
    string,        // "..." or `...`
    dot,           // .
    field,         // .Name
    variable,      // $ or $name
    identifier,    // a function name
    pipe,          // |
    left_paren,    // (
    right_paren,   // )
    declare,       // :=
    assign,        // =
    comma,         // ,
    kw_nil,
    kw_if,
    kw_else,
    kw_end,
    kw_range,
    kw_with,
    kw_break,
    kw_continue,
    kw_define,     // recognised so that it can be refused by name
    kw_template,
    kw_block,
    eof,
};

struct Token {
    TokenKind        kind         = TokenKind::eof;
    size_t           pos          = 0;     // byte offset in the source
    std::string_view text;                 // the source text (text: after trimming)
    bool             space_before = false; // inside actions: whitespace precedes the token
    // Decoded literals.
    std::string      str;                  // string: the unquoted value
    bool             is_int  = false;      // number: an integer literal (or a character)
    int64_t          int_val = 0;
    double           float_val = 0.0;
};

// "line 3, column 7" for a byte offset (columns count bytes, from 1).
std::string describe_position(std::string_view source, size_t pos);

// Throws specd::Error(bad_request) naming the position for malformed input.
class Lexer {
  public:
    explicit Lexer(std::string_view source) : src_(source) {}

    Token next();

  private:
    Token lex_text();
    Token lex_action();
    Token lex_number(size_t start);
    Token lex_quoted(size_t start);
    Token lex_raw(size_t start);
    Token lex_char(size_t start);
    Token lex_word(size_t start, TokenKind kind); // field, variable or identifier
    bool  at_terminator(size_t p) const;
    [[noreturn]] void fail(size_t pos, const std::string & what) const;

    std::string_view src_;
    size_t           pos_         = 0;
    bool             in_action_   = false;
    bool             trim_next_   = false; // the last action ended with ` -}}`
    size_t           action_start_ = 0;
};

} // namespace specd::templates
