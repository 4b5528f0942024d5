// Enum and const schemas: the allowed values' JSON texts as one prefix tree, so that a large
// enum is one deterministic choice per character.
#include "grammar/schema_compiler_impl.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace specd::grammar::schema {

bool Compiler::has_type(const json & v, const std::string & t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
}

std::string Compiler::enumeration(const json & s, const std::string & ptr) {
    for (const auto & [k, v] : s.items()) {
        if (k != "enum" && k != "const" && k != "type" && is_assertion(k))
            fail("keyword \"" + k + "\" beside \"" + (s.contains("enum") ? "enum" : "const") + "\" at " + where(ptr) +
                 " is not supported");
    }
    std::vector<json> values;
    if (s.contains("const")) {
        if (!s.contains("enum") || std::find(s["enum"].begin(), s["enum"].end(), s["const"]) != s["enum"].end())
            values.push_back(s["const"]);
    } else {
        values.assign(s["enum"].begin(), s["enum"].end());
    }
    if (s.contains("type")) {
        const auto types = s["type"].is_string() ? std::vector<std::string>{s["type"].get<std::string>()}
                                                 : s["type"].get<std::vector<std::string>>();
        std::erase_if(values, [&](const json & v) {
            return std::none_of(types.begin(), types.end(), [&](const auto & t) { return has_type(v, t); });
        });
    }
    if (values.empty()) fail("no value of \"enum\"/\"const\" at " + where(ptr) + " satisfies the schema's other keywords");
    // One prefix tree over the values' JSON texts: alternatives split where the texts
    // differ, so a 500-value enum is one deterministic choice per character.
    Trie   trie;
    size_t bytes = 0;
    for (const auto & v : values) {
        const auto text = v.dump();
        bytes += text.size();
        if (bytes > lim_.max_grammar_bytes)
            fail("the grammar for this schema exceeds the limit max_grammar_bytes (" + std::to_string(lim_.max_grammar_bytes) + ")");
        trie.insert(utf8_units(text));
    }
    return trie_expr(trie, hint(ptr));
}

// Bottom-up over the tree (a child's index is above its parent's), so a deep tree needs
// no deep recursion; chains of single children become one literal.
std::string Compiler::trie_expr(const Trie & t, const std::string & name) {
    std::vector<std::string> expr(t.nodes.size());
    for (size_t n = t.nodes.size(); n-- > 0;) {
        const auto & node = t.nodes[n];
        if (n != 0 && !node.end && node.kids.size() == 1) continue; // inside a chain
        std::vector<std::string> alts;
        for (const auto & [unit, kid] : node.kids) {
            std::string lit = unit;
            size_t      at  = kid;
            while (!t.nodes[at].end && t.nodes[at].kids.size() == 1) {
                lit += t.nodes[at].kids.begin()->first;
                at = t.nodes[at].kids.begin()->second;
            }
            std::string rest;
            if (!t.nodes[at].kids.empty()) rest = gbnf_is_name(expr[at]) ? expr[at] : g_.add(name, expr[at]);
            alts.push_back(gbnf_seq({gbnf_literal(lit), rest}));
        }
        if (node.end) alts.push_back("");
        expr[n] = gbnf_alt(alts);
    }
    return expr[0];
}

} // namespace specd::grammar::schema
