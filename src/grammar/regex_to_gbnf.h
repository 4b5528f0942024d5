#pragma once
// JSON Schema `pattern` (a subset of ECMA-262 regular expressions) -> GBNF for the contents
// of a JSON string: the grammar produces the string's JSON text (between the quotes), so a
// `"` or a newline the pattern allows is produced escaped, the way JSON.stringify writes it.
//
// Supported: literals and escaped punctuation, \d \D \w \W \s \S \t \n \r \f \v \0 \xHH
// \uHHHH \u{H..} \cX, classes [a-z0-9_] and [^...] (with the escapes above inside), `.`,
// groups (...) (?:...) (?<name>...), alternation |, quantifiers ? * + {n} {n,} {n,m} and
// their lazy forms, ^ at the start and $ at the end of a top-level alternative.
// Unsupported (a 400 naming it): lookaround, backreferences, \b \B, \p{..}, anchors elsewhere.
//
// JSON Schema patterns are not anchored: "\\d+" matches any string that contains a digit.
// A side without an anchor therefore allows any text there; write ^...$ for a whole match.
#include "grammar/gbnf.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace specd::grammar {

struct RegexLimits {
    size_t   max_length = 1000;  // bytes of pattern text
    int      max_depth  = 32;    // group nesting
    uint64_t max_repeat = 10000; // any count, and counts multiplied through nested quantifiers
};

struct RegexGbnf {
    std::string             expr;    // GBNF for the string's JSON text between the quotes
    uint64_t                min_len; // code points in the shortest match
    std::optional<uint64_t> max_len; // in the longest; nullopt: unbounded
};

// Throws specd::Error(bad_request) saying what is unsupported or invalid; the caller adds
// where the pattern is. `hint` names the rules it adds.
RegexGbnf regex_to_gbnf(std::string_view pattern, GbnfRules & rules, const std::string & hint, const RegexLimits & limits);

// The rule for one JSON string character, escaped or not: [^"\\ controls] or an escape.
std::string json_char_rule(GbnfRules & rules);

// The JSON text of one code point inside a string, as JSON.stringify writes it.
std::string json_encode_codepoint(uint32_t cp);

} // namespace specd::grammar
