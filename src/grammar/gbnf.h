#pragma once
// Writing GBNF for llama.cpp's grammar parser: a rule set with unique, deduplicated names,
// escaping for literals and character classes, and repetition whose text stays small however
// large the count. The schema and regex compilers share these; neither writes GBNF syntax
// by hand beyond sequences and alternations.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::grammar {

// Inclusive range of Unicode code points.
struct CodepointRange {
    uint32_t lo;
    uint32_t hi;
};

class GbnfRules {
  public:
    // Adding past `max_bytes` of grammar text throws specd::Error(bad_request).
    explicit GbnfRules(size_t max_bytes) : max_bytes_(max_bytes) {}

    // A rule for `body`, named after `hint`; an identical body reuses the existing rule, so
    // shared pieces (string, integer, a $ref target) appear once.
    std::string add(std::string_view hint, const std::string & body);
    // A name now and the body later, for recursive rules whose body mentions the name.
    std::string reserve(std::string_view hint);
    void        define(const std::string & name, const std::string & body);

    size_t      bytes() const { return bytes_; }
    // Every rule, one per line, in definition order.
    std::string text() const;

  private:
    void count(const std::string & name, const std::string & body);

    size_t                                       max_bytes_;
    size_t                                       bytes_ = 0;
    std::map<std::string, size_t>                names_;  // name -> index in rules_
    std::map<std::string, int>                   suffix_; // base name -> last suffix tried
    std::map<std::string, std::string>           by_body_;
    std::vector<std::pair<std::string, std::string>> rules_; // (name, body); body empty until defined
};

// True when `expr` is one rule name (a reference needs no parentheses or wrapping rule).
bool gbnf_is_name(std::string_view expr);

// A quoted GBNF literal for the UTF-8 text.
std::string gbnf_literal(std::string_view utf8);

// A character class `[...]` for the ranges (sorted or not; may be empty: then it matches nothing
// and must not be emitted, the caller checks).
std::string gbnf_class(const std::vector<CodepointRange> & ranges);

// `item` (a rule name) repeated min..max times (max nullopt: unbounded), as an expression.
// llama.cpp's parser expands `x{n,m}` into n copies plus m-n nested rules, and treats counts
// above 2000 as unbounded; this keeps every brace count small and chains fixed-size chunks
// for large ones, so the text grows with count/32 and the rules stay unambiguous.
std::string gbnf_repeat(GbnfRules & rules, const std::string & item, uint64_t min, std::optional<uint64_t> max);

// A sequence of expressions (empty ones skipped). Each part must already be one unit: a
// name, literal, class, or a parenthesized group as gbnf_alt returns.
std::string gbnf_seq(const std::vector<std::string> & parts);
// An alternation as one unit: "(a | b)", or "(a | b)?" when an alternative is empty.
std::string gbnf_alt(const std::vector<std::string> & alts);

// A JSON number's optional exponent, at most 292: with at most 16 integer digits (and any
// fraction) every number a grammar allows stays finite as a double (below 1.8e308), so a
// schema validator never reads one as Infinity.
constexpr const char * k_gbnf_json_exponent =
    R"(([eE] [-+]? ([0-9]{1,2} | "1" [0-9]{2} | "2" [0-8] [0-9] | "29" [0-2]))?)";

} // namespace specd::grammar
