#include "grammar/thinking_grammar.h"

#include "core/error.h"
#include "grammar/gbnf.h"

#include <cctype>

namespace specd::grammar {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

// Every use of the rule name `from` in `gbnf` (definitions and references) renamed to `to`;
// literals, character classes and comments are copied as they are.
std::string rename_rule(const std::string & gbnf, const std::string & from, const std::string & to) {
    std::string out;
    out.reserve(gbnf.size() + 64);
    for (size_t i = 0; i < gbnf.size();) {
        const char c = gbnf[i];
        if (c == '"' || c == '[') {
            const char end = c == '"' ? '"' : ']';
            size_t     j   = i + 1;
            while (j < gbnf.size() && gbnf[j] != end) j += gbnf[j] == '\\' ? 2 : 1;
            j = std::min(j + 1, gbnf.size());
            out.append(gbnf, i, j - i);
            i = j;
        } else if (c == '#') {
            const size_t j = std::min(gbnf.find('\n', i), gbnf.size());
            out.append(gbnf, i, j - i);
            i = j;
        } else if (is_name_char(c)) {
            size_t j = i;
            while (j < gbnf.size() && is_name_char(gbnf[j])) ++j;
            const std::string name = gbnf.substr(i, j - i);
            out += name == from ? to : name;
            i = j;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

} // namespace

std::string thinking_then(const std::string & answer, const ThinkingBlock & block) {
    if (block.close.empty()) throw bad_request("this model's template has no end tag for its reasoning");
    // A name the answer's grammar does not use (its rules are renamed around it otherwise).
    std::string answer_root = "answer-root";
    while (answer.find(answer_root) != std::string::npos) answer_root += "-x";

    const auto first = static_cast<unsigned char>(block.close[0]);
    if (first >= 0x80) throw bad_request("this model's reasoning end tag does not start with an ASCII character");
    // [^<]: every character but the close tag's first.
    const std::string think_char = "[^" + gbnf_class({{first, first}}).substr(1);
    GbnfRules rules(size_t(1) << 20);
    // Names the answer's grammar (schema-derived names) will not have.
    const std::string ch   = rules.add("specd-think-char", think_char);
    const std::string body = gbnf_repeat(rules, ch, 0, block.budget_chars ? std::optional<uint64_t>(*block.budget_chars) : std::nullopt);
    rules.define(rules.reserve("root"), gbnf_seq({block.open.empty() ? "" : gbnf_literal(block.open), body,
                                                  gbnf_literal(block.close), gbnf_literal(block.separator), answer_root}));
    return rules.text() + rename_rule(answer, "root", answer_root);
}

} // namespace specd::grammar
