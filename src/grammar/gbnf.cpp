#include "grammar/gbnf.h"

#include "core/error.h"

#include <algorithm>
#include <cstdio>

namespace specd::grammar {

namespace {

// llama.cpp rule names are [a-zA-Z0-9-]; hints come from property names, so sanitize.
std::string sanitize(std::string_view hint) {
    std::string out;
    for (char c : hint) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (ok) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
        if (out.size() >= 32) break;
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? "r" : out;
}

// Escape for one code point inside a class: the parser knows \x \u \U \t \r \n \\ \" \[ \] \-.
void append_class_char(std::string & out, uint32_t c) {
    char buf[16];
    switch (c) {
        case '\\': out += "\\\\"; return;
        case ']':  out += "\\]"; return;
        case '[':  out += "\\["; return;
        case '-':  out += "\\-"; return;
        case '"':  out += "\\\""; return;
        case '^':  out += "\\x5E"; return; // a leading ^ would negate; there is no \^ escape
        default: break;
    }
    if (c >= 0x21 && c < 0x7F) out += static_cast<char>(c);
    else if (c <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02X", c), out += buf;
    else if (c <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", c), out += buf;
    else std::snprintf(buf, sizeof buf, "\\U%08X", c), out += buf;
}

constexpr uint64_t k_chunk = 32; // brace counts stay at or below this

std::string brace(const std::string & item, uint64_t min, uint64_t max) {
    if (max == 0) return "";
    if (min == 1 && max == 1) return item;
    if (min == 0 && max == 1) return item + "?";
    if (min == max) return item + "{" + std::to_string(min) + "}";
    return item + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
}

// Exactly n copies.
std::string exact(GbnfRules & rules, const std::string & item, uint64_t n) {
    if (n <= k_chunk) return brace(item, n, n);
    const auto chunk = rules.add(item + "-x" + std::to_string(k_chunk), brace(item, k_chunk, k_chunk));
    return gbnf_seq({exact(rules, chunk, n / k_chunk), brace(item, n % k_chunk, n % k_chunk)});
}

// Zero to m copies: R(m) ::= item{0,31} | item{32} R(m-32), one rule per 32 of m, every
// count parsed one way only.
std::string up_to(GbnfRules & rules, const std::string & item, uint64_t m) {
    if (m < k_chunk) return brace(item, 0, m);
    const auto short_run = rules.add(item + "-upto", brace(item, 0, k_chunk - 1));
    const auto chunk     = rules.add(item + "-x" + std::to_string(k_chunk), brace(item, k_chunk, k_chunk));
    std::string r = brace(item, 0, m % k_chunk);
    for (uint64_t level = m % k_chunk + k_chunk; level <= m; level += k_chunk) {
        const auto tail = r.empty() ? std::string() : (gbnf_is_name(r) ? r : rules.add(item + "-upto", r));
        r = rules.add(item + "-upto" + std::to_string(level), short_run + " | " + gbnf_seq({chunk, tail}));
    }
    return r;
}

} // namespace

void GbnfRules::count(const std::string & name, const std::string & body) {
    bytes_ += name.size() + body.size() + 6; // " ::= " and the newline
    if (bytes_ > max_bytes_) {
        throw bad_request("the grammar for this schema exceeds the limit max_grammar_bytes (" +
                          std::to_string(max_bytes_) + ")");
    }
}

std::string GbnfRules::reserve(std::string_view hint) {
    const auto base = sanitize(hint);
    auto       name = base;
    // Suffixes continue per base, so many rules from one hint do not rescan the taken names.
    for (auto & i = suffix_[base]; names_.count(name); ) name = base + "-" + std::to_string(++i);
    names_.emplace(name, rules_.size());
    rules_.emplace_back(name, std::string());
    return name;
}

void GbnfRules::define(const std::string & name, const std::string & body) {
    const auto it = names_.find(name);
    if (it == names_.end()) return;
    count(name, body);
    rules_[it->second].second = body;
}

std::string GbnfRules::add(std::string_view hint, const std::string & body) {
    if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
    auto name = reserve(hint);
    define(name, body);
    by_body_.emplace(body, name);
    return name;
}

std::string GbnfRules::text() const {
    std::string out;
    out.reserve(bytes_);
    for (const auto & [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
}

bool gbnf_is_name(std::string_view expr) {
    if (expr.empty()) return false;
    return std::all_of(expr.begin(), expr.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    });
}

std::string gbnf_literal(std::string_view utf8) {
    std::string out = "\"";
    char        buf[8];
    for (unsigned char c : utf8) {
        switch (c) {
            case '"':  out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7F) std::snprintf(buf, sizeof buf, "\\x%02X", c), out += buf;
                else out += static_cast<char>(c); // UTF-8 passes through; the parser decodes it
        }
    }
    return out + "\"";
}

std::string gbnf_class(const std::vector<CodepointRange> & ranges) {
    std::string out = "[";
    for (const auto & r : ranges) {
        append_class_char(out, r.lo);
        if (r.hi != r.lo) {
            out += '-';
            append_class_char(out, r.hi);
        }
    }
    return out + "]";
}

std::string gbnf_repeat(GbnfRules & rules, const std::string & item, uint64_t min, std::optional<uint64_t> max) {
    if (!max) return gbnf_seq({exact(rules, item, min), item + "*"});
    if (min <= k_chunk && *max <= k_chunk) return brace(item, min, *max);
    return gbnf_seq({exact(rules, item, min), up_to(rules, item, *max - min)});
}

std::string gbnf_seq(const std::vector<std::string> & parts) {
    std::string out;
    for (const auto & p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out += ' ';
        out += p;
    }
    return out;
}

std::string gbnf_alt(const std::vector<std::string> & alts) {
    std::vector<std::string> present;
    bool                     empty = false;
    for (const auto & a : alts) {
        if (a.empty()) empty = true;
        else if (std::find(present.begin(), present.end(), a) == present.end()) present.push_back(a);
    }
    if (present.empty()) return "";
    if (present.size() == 1 && !empty) return present[0];
    std::string out = "(";
    for (size_t i = 0; i < present.size(); ++i) out += (i ? " | " : "") + present[i];
    return out + (empty ? ")?" : ")");
}

} // namespace specd::grammar
