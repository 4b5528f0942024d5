#include "grammar/regex_to_gbnf.h"

#include "core/error.h"
#include "core/utf8.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace specd::grammar {

namespace {

using Ranges = std::vector<CodepointRange>;

constexpr uint32_t k_max_cp = 0x10FFFF;

Ranges normalize(Ranges r) {
    std::sort(r.begin(), r.end(), [](auto a, auto b) { return a.lo < b.lo; });
    Ranges out;
    for (auto x : r) {
        if (!out.empty() && x.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, x.hi);
        else out.push_back(x);
    }
    return out;
}

Ranges complement(const Ranges & r) {
    Ranges   out;
    uint32_t next = 0;
    for (auto x : normalize(r)) {
        if (x.lo > next) out.push_back({next, x.lo - 1});
        next = x.hi + 1;
    }
    if (next <= k_max_cp) out.push_back({next, k_max_cp});
    return out;
}

bool contains(const Ranges & r, uint32_t c) {
    return std::any_of(r.begin(), r.end(), [c](auto x) { return x.lo <= c && c <= x.hi; });
}

// ECMA-262 \d \w \s.
const Ranges k_digit = {{'0', '9'}};
const Ranges k_word  = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges k_space = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                        {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.` excludes the line terminators.
const Ranges k_dot = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});


// The input comes from a parsed JSON document, so it is valid UTF-8 (a byte that is not
// would stand for itself).
std::vector<uint32_t> code_points(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
        const Utf8Char c = decode_utf8(s.substr(i));
        out.push_back(c.len ? c.cp : static_cast<unsigned char>(s[i]));
        i += c.len ? c.len : 1;
    }
    return out;
}

uint64_t sat_mul(uint64_t a, uint64_t b, uint64_t cap) {
    if (a == 0 || b == 0) return 0;
    return a > cap / b ? cap + 1 : a * b;
}

[[noreturn]] void fail(const std::string & what) { throw bad_request(what); }

// A parsed piece of the pattern: its GBNF and what is known about its matches.
struct Frag {
    std::string             expr;
    uint64_t                min = 0;
    std::optional<uint64_t> max = 0;
    uint64_t                cost = 0;  // positions once counted repetitions are expanded
    bool                    is_lit = false;
    std::string             lit;      // JSON text, when the piece is a fixed string
};

class Parser {
  public:
    Parser(std::string_view pattern, GbnfRules & rules, const std::string & hint, const RegexLimits & lim) :
        cps_(code_points(pattern)), rules_(rules), hint_(hint), lim_(lim) {}

    RegexGbnf run() {
        std::vector<Frag> alts;
        for (;;) {
            const bool start = eat('^');
            Frag       f     = alternative(true);
            const bool end   = eat('$');
            if (end && !at_end() && peek() != '|') fail("the anchor $ is only supported at the end of the pattern");
            // An unanchored side may hold any text: JSON Schema patterns match anywhere.
            if (!start || !end) {
                const auto any = json_char_rule(rules_) + "*";
                f.expr = f.expr.empty() ? any : gbnf_seq({start ? "" : any, f.expr, end ? "" : any});
                f.max  = std::nullopt;
                f.is_lit = false;
            }
            alts.push_back(std::move(f));
            if (!eat('|')) break;
        }
        if (!at_end()) fail(peek() == ')' ? "unbalanced parenthesis in pattern" : "unexpected character in pattern");
        const auto f = alternation(std::move(alts));
        return {f.expr, f.min, f.max};
    }

  private:
    bool     at_end() const { return pos_ >= cps_.size(); }
    uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }
    bool     eat(uint32_t c) {
        if (at_end() || cps_[pos_] != c) return false;
        ++pos_;
        return true;
    }

    Frag alternation(std::vector<Frag> alts) {
        if (alts.size() == 1) return std::move(alts[0]);
        Frag                     out;
        std::vector<std::string> exprs;
        out.min = UINT64_MAX;
        for (auto & a : alts) {
            exprs.push_back(a.expr);
            out.min = std::min(out.min, a.min);
            if (!a.max || !out.max) out.max = std::nullopt;
            else out.max = std::max(*out.max, *a.max);
            out.cost += a.cost;
        }
        out.expr = gbnf_alt(exprs);
        return out;
    }

    Frag disjunction() {
        std::vector<Frag> alts{alternative(false)};
        while (eat('|')) alts.push_back(alternative(false));
        return alternation(std::move(alts));
    }

    // Terms up to '|', ')' or the end; a top-level alternative also stops at '$'.
    Frag alternative(bool top) {
        std::vector<Frag> terms;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$' && top) break;
            if (peek() == '^' || peek() == '$') fail("anchors (^ $) are only supported at the ends of the pattern");
            terms.push_back(term());
        }
        Frag        out;
        std::vector<std::string> parts;
        std::string lit;
        bool        lit_open = false;
        const auto  flush    = [&] {
            if (lit_open) parts.push_back(gbnf_literal(lit));
            lit.clear();
            lit_open = false;
        };
        for (auto & t : terms) {
            out.min += t.min;
            if (!t.max || !out.max) out.max = std::nullopt;
            else *out.max += *t.max;
            out.cost += t.cost;
            // Adjacent fixed strings join into one literal.
            if (t.is_lit) {
                lit += t.lit;
                lit_open = true;
            } else {
                flush();
                parts.push_back(t.expr);
            }
        }
        if (parts.empty() && lit_open) {
            out.is_lit = true;
            out.lit    = lit;
        }
        flush();
        out.expr = gbnf_seq(parts);
        if (out.cost > lim_.max_repeat) too_many(out.cost);
        return out;
    }

    Frag term() {
        Frag atom_frag = atom();
        uint64_t                n = 1;
        std::optional<uint64_t> m = 1;
        if (eat('*')) n = 0, m = std::nullopt;
        else if (eat('+')) n = 1, m = std::nullopt;
        else if (eat('?')) n = 0, m = 1;
        else if (!braces(n, m)) return atom_frag;
        eat('?'); // lazy: the same strings match
        if (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && is_braces()))
            fail("nothing to repeat in pattern");
        if (m && n > *m) fail("pattern quantifier {" + std::to_string(n) + "," + std::to_string(*m) + "} is out of order");
        if (n > lim_.max_repeat || (m && *m > lim_.max_repeat)) too_many(m ? *m : n);
        return repeat(std::move(atom_frag), n, m);
    }

    [[noreturn]] void too_many(uint64_t count) const {
        fail("pattern repeats " + std::to_string(count) + " times (nested counts multiplied), above the limit max_repeat (" +
             std::to_string(lim_.max_repeat) + ")");
    }

    Frag repeat(Frag x, uint64_t n, std::optional<uint64_t> m) {
        Frag out;
        out.min  = x.min * n;
        out.max  = (x.max && *x.max == 0) || (m && *m == 0) ? std::optional<uint64_t>(0)
                 : (x.max && m) ? std::optional<uint64_t>(*x.max * *m) : std::nullopt;
        out.cost = sat_mul(std::max<uint64_t>(x.cost, 1), std::max<uint64_t>(m ? *m : n, 1), lim_.max_repeat);
        if (out.cost > lim_.max_repeat) too_many(out.cost);
        if (x.expr.empty() || (m && *m == 0)) return out;
        // x* over an x that can be empty is left recursion (x* ::= x x* | ""), which
        // llama.cpp's grammar rejects.
        if (!m && x.min == 0)
            fail("an unbounded repetition of a part that can match nothing, like (a*)*, is not supported in patterns");
        const auto item = gbnf_is_name(x.expr) ? x.expr : rules_.add(hint_, x.expr);
        out.expr = gbnf_repeat(rules_, item, n, m);
        return out;
    }

    bool is_braces() {
        const auto save = pos_;
        uint64_t                n;
        std::optional<uint64_t> m;
        const bool ok = braces(n, m);
        pos_ = save;
        return ok;
    }

    // {n} {n,} {n,m}; anything else leaves the position and is a literal '{' (Annex B).
    bool braces(uint64_t & n, std::optional<uint64_t> & m) {
        if (peek() != '{') return false;
        const auto save = pos_;
        ++pos_;
        const auto number = [&](uint64_t & v) {
            if (peek() < '0' || peek() > '9') return false;
            v = 0;
            while (peek() >= '0' && peek() <= '9') {
                v = std::min<uint64_t>(v * 10 + (peek() - '0'), UINT64_MAX / 20);
                ++pos_;
            }
            return true;
        };
        if (!number(n)) return pos_ = save, false;
        if (eat('}')) return m = n, true;
        if (!eat(',')) return pos_ = save, false;
        uint64_t hi;
        if (number(hi)) m = hi;
        else m = std::nullopt;
        if (!eat('}')) return pos_ = save, false;
        return true;
    }

    Frag atom() {
        const uint32_t c = peek();
        if (c == '(') return group();
        if (c == '*' || c == '+' || c == '?' || (c == '{' && is_braces())) fail("nothing to repeat in pattern");
        ++pos_;
        if (c == '.') return chars(k_dot);
        if (c == '[') return chars(char_class());
        if (c == '\\') {
            Ranges set;
            return escape(false, set) ? chars(set) : chars({{last_char_, last_char_}});
        }
        return chars({{c, c}});
    }

    Frag group() {
        ++pos_;
        if (eat('?')) {
            if (eat(':')) {
            } else if (peek() == '<' && peek(1) != '=' && peek(1) != '!') {
                while (!at_end() && peek() != '>') ++pos_; // a named group is a group
                if (!eat('>')) fail("unterminated group name in pattern");
            } else {
                fail("lookahead, lookbehind and inline flags are not supported in patterns");
            }
        }
        if (++depth_ > lim_.max_depth)
            fail("pattern nesting exceeds the limit max_pattern_depth (" + std::to_string(lim_.max_depth) + ")");
        Frag f = disjunction();
        --depth_;
        if (!eat(')')) fail("unbalanced parenthesis in pattern");
        return f;
    }

    uint32_t hex(int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const uint32_t c = peek();
            int            d = c >= '0' && c <= '9' ? int(c - '0') : c >= 'a' && c <= 'f' ? int(c - 'a' + 10)
                             : c >= 'A' && c <= 'F' ? int(c - 'A' + 10) : -1;
            if (d < 0) fail("invalid hex escape in pattern");
            v = v * 16 + d;
            ++pos_;
        }
        return v;
    }

    // After a backslash: a class escape fills `set` and returns true; a single character is
    // left in last_char_ and returns false.
    bool escape(bool in_class, Ranges & set) {
        if (at_end()) fail("pattern ends with a lone backslash");
        const uint32_t c = peek();
        ++pos_;
        switch (c) {
            case 'd': set = k_digit; return true;
            case 'D': set = complement(k_digit); return true;
            case 'w': set = k_word; return true;
            case 'W': set = complement(k_word); return true;
            case 's': set = k_space; return true;
            case 'S': set = complement(k_space); return true;
            case 't': last_char_ = '\t'; return false;
            case 'n': last_char_ = '\n'; return false;
            case 'r': last_char_ = '\r'; return false;
            case 'f': last_char_ = '\f'; return false;
            case 'v': last_char_ = '\v'; return false;
            case 'x': last_char_ = hex(2); return false;
            case 'c':
                if (!((peek() >= 'a' && peek() <= 'z') || (peek() >= 'A' && peek() <= 'Z'))) fail("invalid \\c escape in pattern");
                last_char_ = peek() % 32;
                ++pos_;
                return false;
            case 'u':
                if (eat('{')) {
                    uint32_t v = 0;
                    int      n = 0;
                    while (!at_end() && peek() != '}' && n < 7) v = v * 16 + hex(1), ++n;
                    if (!eat('}') || n == 0 || v > k_max_cp) fail("invalid \\u{...} escape in pattern");
                    last_char_ = v;
                    return false;
                }
                last_char_ = hex(4);
                // A surrogate pair written as two escapes is one character.
                if (last_char_ >= 0xD800 && last_char_ <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
                    const auto save = pos_;
                    pos_ += 2;
                    const auto low = hex(4);
                    if (low >= 0xDC00 && low <= 0xDFFF) last_char_ = 0x10000 + ((last_char_ - 0xD800) << 10) + (low - 0xDC00);
                    else pos_ = save;
                }
                if (last_char_ >= 0xD800 && last_char_ <= 0xDFFF) fail("lone surrogate escape in pattern");
                return false;
            case '0':
                if (peek() >= '0' && peek() <= '9') fail("octal escapes are not supported in patterns");
                last_char_ = 0;
                return false;
            case 'b':
                if (in_class) {
                    last_char_ = '\b';
                    return false;
                }
                fail("word boundaries (\\b \\B) are not supported in patterns");
            case 'B': fail("word boundaries (\\b \\B) are not supported in patterns");
            case 'p':
            case 'P': fail("Unicode property escapes (\\p{...}) are not supported in patterns");
            case 'k': fail("backreferences are not supported in patterns");
            default: break;
        }
        if (c >= '1' && c <= '9') fail("backreferences are not supported in patterns");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            fail(std::string("unknown escape \\") + static_cast<char>(c) + " in pattern");
        last_char_ = c; // escaped punctuation stands for itself
        return false;
    }

    // After '[': the members up to ']', complemented for [^...].
    Ranges char_class() {
        const bool negated = eat('^');
        Ranges     set;
        // One member: a character (returned in `c`, true) or a class escape (added, false).
        const auto member = [&](uint32_t & c) {
            c = peek();
            ++pos_;
            if (c != '\\') return true;
            Ranges sub;
            if (escape(true, sub)) {
                set.insert(set.end(), sub.begin(), sub.end());
                return false;
            }
            c = last_char_;
            return true;
        };
        while (!eat(']')) {
            if (at_end()) fail("unterminated character class in pattern");
            uint32_t lo;
            if (!member(lo)) continue;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
                ++pos_;
                uint32_t hi;
                if (!member(hi)) fail("a character class range cannot end in a class escape");
                if (hi < lo) fail("character class range out of order in pattern");
                set.push_back({lo, hi});
            } else {
                set.push_back({lo, lo});
            }
        }
        return negated ? complement(set) : normalize(set);
    }

    // A set of characters as JSON text: the ones written as themselves in one class, '"',
    // '\\' and control characters as their escapes.
    Frag chars(const Ranges & in) {
        const Ranges set = normalize(in);
        if (set.empty()) fail("an empty character class can never match");
        Frag f;
        f.min = 1, f.max = 1, f.cost = 1;
        if (set.size() == 1 && set[0].lo == set[0].hi) {
            f.is_lit = true;
            f.lit    = json_encode_codepoint(set[0].lo);
            f.expr   = gbnf_literal(f.lit);
            return f;
        }
        Ranges plain;
        for (auto r : set) {
            // Keep what JSON writes as itself: from U+0020 on, except '"' and '\\'.
            for (auto piece : complement({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}})) {
                const uint32_t lo = std::max(r.lo, piece.lo), hi = std::min(r.hi, piece.hi);
                if (lo <= hi) plain.push_back({lo, hi});
            }
        }
        std::vector<std::string> alts;
        if (!plain.empty()) alts.push_back(gbnf_class(normalize(plain)));
        std::string short_escapes;
        for (auto [c, e] : {std::pair{'"', '"'}, {'\\', '\\'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}})
            if (contains(set, static_cast<unsigned char>(c))) short_escapes += e;
        if (!short_escapes.empty()) {
            Ranges r;
            for (char e : short_escapes) r.push_back({static_cast<unsigned char>(e), static_cast<unsigned char>(e)});
            alts.push_back("\"\\\\\" " + gbnf_class(r));
        }
        for (uint32_t high : {0u, 1u}) {
            Ranges low;
            for (uint32_t c = high * 16; c < high * 16 + 16; ++c) {
                if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t' || !contains(set, c)) continue;
                const uint32_t d = c % 16 < 10 ? '0' + c % 16 : 'a' + c % 16 - 10;
                low.push_back({d, d});
            }
            if (!low.empty()) alts.push_back(gbnf_literal("\\u00" + std::to_string(high)) + " " + gbnf_class(normalize(low)));
        }
        f.expr = alts.size() == 1 ? alts[0] : rules_.add(hint_ + "-char", gbnf_alt(alts).substr(1, gbnf_alt(alts).size() - 2));
        return f;
    }

    std::vector<uint32_t> cps_;
    size_t                pos_ = 0;
    int                   depth_ = 0;
    uint32_t              last_char_ = 0;
    GbnfRules &           rules_;
    std::string           hint_;
    const RegexLimits &   lim_;
};

} // namespace

std::string json_encode_codepoint(uint32_t cp) {
    switch (cp) {
        case '"': return "\\\"";
        case '\\': return "\\\\";
        case '\b': return "\\b";
        case '\f': return "\\f";
        case '\n': return "\\n";
        case '\r': return "\\r";
        case '\t': return "\\t";
        default: break;
    }
    std::string out;
    if (cp < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        return buf;
    }
    append_utf8(out, cp);
    return out;
}

std::string json_char_rule(GbnfRules & rules) {
    return rules.add("char", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))");
}

RegexGbnf regex_to_gbnf(std::string_view pattern, GbnfRules & rules, const std::string & hint, const RegexLimits & limits) {
    if (pattern.size() > limits.max_length) {
        fail("pattern is " + std::to_string(pattern.size()) + " bytes, above the limit max_pattern_length (" +
             std::to_string(limits.max_length) + ")");
    }
    return Parser(pattern, rules, hint, limits).run();
}

} // namespace specd::grammar
