// Object schemas: properties in the schema's order, required ones always written, extra keys
// (additionalProperties) after them and never repeating a declared one.
#include "grammar/schema_compiler_impl.h"

#include "core/utf8.h"
#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace specd::grammar::schema {

std::string Compiler::object(const json & s, const std::string & ptr, int depth) {
    const json         no_props = json::object();
    const json &       props    = s.contains("properties") ? s["properties"] : no_props;
    std::set<std::string> required;
    if (s.contains("required"))
        for (const auto & r : s["required"]) required.insert(r.get<std::string>());
    // Absent additionalProperties: no extra keys when properties are declared (what a
    // structured-output caller means), any object otherwise.
    const json additional = s.contains("additionalProperties") ? s["additionalProperties"] : json(!s.contains("properties"));
    const bool extras     = !(additional.is_boolean() && !additional.get<bool>());

    std::vector<Property> list;
    for (const auto & [key, v] : props.items()) {
        if (v.is_boolean() && !v.get<bool>()) {
            if (required.count(key)) fail("required property " + json_quote(key) + " at " + where(ptr) + " has the schema false");
            continue;
        }
        list.push_back({key, visit(v, child(child(ptr, "properties"), key), depth + 1), required.count(key) > 0});
    }
    for (const auto & r : s.contains("required") ? s["required"] : json::array()) {
        const auto key = r.get<std::string>();
        if (props.contains(key) || std::any_of(list.begin(), list.end(), [&](const auto & p) { return p.key == key; })) continue;
        if (!extras)
            fail("required property " + json_quote(key) + " at " + where(ptr) + " is not in \"properties\" and additional properties are not allowed");
        list.push_back({key, visit(additional, child(ptr, "additionalProperties"), depth + 1), true});
    }

    std::string extra_kv;
    if (extras) {
        std::vector<std::string> declared;
        for (const auto & p : list) declared.push_back(p.key);
        const auto key_rule = declared.empty() ? string_rule() : other_key(declared, hint(ptr) + "-key");
        extra_kv = g_.add(hint(ptr) + "-extra",
                          gbnf_seq({key_rule, "\":\"", visit(additional, child(ptr, "additionalProperties"), depth + 1)}));
    }

    // next[i]: one or more members, the first chosen among properties i.. (skipping only
    // optional ones), then extras; after[i]: what may follow once a member is written.
    const size_t             n = list.size();
    std::vector<bool>        all_optional(n + 1, true);
    std::vector<std::string> next(n + 1), after(n + 1);
    for (size_t i = n; i-- > 0;) all_optional[i] = !list[i].required && all_optional[i + 1];
    if (extras) {
        after[n] = g_.add(hint(ptr) + "-more", gbnf_seq({"\",\"", extra_kv})) + "*";
        next[n]  = gbnf_seq({extra_kv, after[n]});
    }
    for (size_t i = n; i-- > 0;) {
        const auto member = gbnf_seq({gbnf_literal(json_quote(list[i].key) + ":"), list[i].rule, after[i + 1]});
        std::vector<std::string> alts{member};
        if (!list[i].required && !next[i + 1].empty()) alts.push_back(next[i + 1]);
        const auto choice = gbnf_alt(alts);
        next[i]  = gbnf_is_name(choice) ? choice : g_.add(hint(ptr) + "-from-" + std::to_string(i), strip_group(choice));
        after[i] = all_optional[i] ? gbnf_alt({gbnf_seq({"\",\"", next[i]}), ""}) : gbnf_seq({"\",\"", next[i]});
    }
    // Property counts, where the shape above implies them or one change does: the required
    // properties reach minProperties, or minProperties 1 drops the empty object; without
    // extra keys the declared properties stay within maxProperties. Else not enforced.
    const uint64_t n_required = uint64_t(std::count_if(list.begin(), list.end(), [](const Property & p) { return p.required; }));
    bool           nonempty   = false;
    if (s.contains("minProperties")) {
        const uint64_t min = count(s, "minProperties", 0);
        if (min == 1 && n_required == 0 && !next[0].empty()) nonempty = true;
        else if (n_required < min) not_enforced("minProperties", ptr, "fewer properties are required, and which optional ones to write is the model's choice");
    }
    if (s.contains("maxProperties") && (extras || list.size() > count(s, "maxProperties", 0))) {
        not_enforced("maxProperties", ptr, "more properties may be written, and which optional ones to write is the model's choice");
    }
    if (next[0].empty()) return "\"{}\"";
    return gbnf_seq({"\"{\"", all_optional[0] && !nonempty ? gbnf_alt({next[0], ""}) : next[0], "\"}\""});
}

// A rule body need not be one parenthesized unit.
std::string Compiler::strip_group(const std::string & alt) {
    if (alt.size() > 2 && alt.front() == '(' && alt.back() == ')') return alt.substr(1, alt.size() - 2);
    return alt;
}

// A JSON string that is none of `keys` (an extra property must not repeat a declared one):
// a prefix tree over the keys' JSON texts; leaving it early, or going on past a key's
// end, gives a different key.
std::string Compiler::other_key(const std::vector<std::string> & keys, const std::string & name) {
    Trie t;
    for (const auto & k : keys) {
        const auto text = json_quote(k);
        std::vector<std::string> units;
        // JSON text units: an escape (\" \\ \n \u0001) is one character of the key.
        for (size_t i = 1; i + 1 < text.size();) {
            size_t len = text[i] == '\\' ? (text[i + 1] == 'u' ? 6 : 2) : utf8_units(text.substr(i, 4))[0].size();
            units.push_back(text.substr(i, len));
            i += len;
        }
        t.insert(units);
    }
    const auto               ch = json_char_rule(g_);
    std::vector<std::string> rule(t.nodes.size());
    for (size_t n = t.nodes.size(); n-- > 0;) rule[n] = other_key_node(t, n, name, ch, rule);
    return gbnf_seq({"\"\\\"\"", rule[0]});
}

// The rest of a key from node n: a character along the tree, one that leaves it (then
// anything), or the closing quote where no key ends. `rule` holds the deeper nodes' rules.
std::string Compiler::other_key_node(const Trie & t, size_t n, const std::string & name, const std::string & ch,
                                     const std::vector<std::string> & rule) {
    std::vector<std::string> alts;
    std::vector<CodepointRange> taken = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    std::string                 taken_escapes;
    for (const auto & [unit, kid] : t.nodes[n].kids) {
        alts.push_back(gbnf_seq({gbnf_literal(unit), rule[kid]}));
        if (unit[0] == '\\') taken_escapes += unit[1];
        else taken.push_back({first_codepoint(unit), first_codepoint(unit)});
    }
    // A character that leaves the tree, then anything.
    std::vector<CodepointRange> free;
    uint32_t                    next = 0;
    std::sort(taken.begin(), taken.end(), [](auto a, auto b) { return a.lo < b.lo; });
    for (auto r : taken) {
        if (r.lo > next) free.push_back({next, r.lo - 1});
        next = std::max(next, r.hi + 1);
    }
    if (next <= 0x10FFFF) free.push_back({next, 0x10FFFF});
    std::vector<CodepointRange> escapes;
    for (char e : std::string("\"\\/bfnrt"))
        if (taken_escapes.find(e) == std::string::npos) escapes.push_back({static_cast<uint32_t>(e), static_cast<uint32_t>(e)});
    std::string leave = gbnf_class(free);
    if (!escapes.empty()) leave += " | \"\\\\\" " + gbnf_class(escapes);
    leave += " | \"\\\\u\" [0-9a-fA-F]{4}";
    alts.push_back(gbnf_seq({g_.add(name + "-leave", leave), ch + "*", "\"\\\"\""}));
    if (!t.nodes[n].end) alts.push_back("\"\\\"\"");
    return g_.add(name, strip_group(gbnf_alt(alts)));
}

uint32_t Compiler::first_codepoint(const std::string & u) { return decode_utf8(u).cp; }

} // namespace specd::grammar::schema
