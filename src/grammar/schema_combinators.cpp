// anyOf / oneOf / allOf: branches as alternatives, with the keywords beside the combinator
// merged into each branch.
#include "grammar/schema_compiler_impl.h"

#include <string>
#include <vector>

namespace specd::grammar::schema {

// anyOf / oneOf as alternatives (oneOf's "exactly one" is not enforced: its branches are
// expected to be disjoint, as discriminated unions are); allOf with one element. Keywords
// beside the combinator are merged into each branch (A and (B or C) = (A and B) or (A and C)).
std::string Compiler::combine(const json & s, const std::string & key, const std::string & ptr, int depth) {
    const auto & branches = s[key];
    if (key == "allOf" && branches.size() != 1)
        fail("unsupported JSON schema feature \"allOf\" with " + std::to_string(branches.size()) + " schemas at " + where(ptr) +
             " (only a single-schema allOf is supported)");
    json siblings = json::object();
    for (const auto & [k, v] : s.items())
        if (k != key && is_assertion(k)) siblings[k] = v;
    std::vector<std::string> alts;
    for (size_t i = 0; i < branches.size(); ++i) {
        const auto  bptr = child(child(ptr, key), std::to_string(i));
        const auto & b   = branches[i];
        if (b.is_boolean() && !b.get<bool>()) continue; // a branch nothing matches
        if (siblings.empty()) {
            alts.push_back(visit(b, bptr, depth + 1));
            continue;
        }
        json merged = siblings;
        if (b.is_object()) {
            for (const auto & [k, v] : b.items()) {
                if (!is_assertion(k)) continue;
                if (k == "$ref")
                    fail("keywords beside \"" + key + "\" at " + where(ptr) + " with a $ref branch (" + where(bptr) +
                         ") are not supported");
                if (merged.contains(k))
                    fail("keyword \"" + k + "\" both beside \"" + key + "\" at " + where(ptr) + " and in its branch " +
                         where(bptr) + " is not supported");
                merged[k] = v;
            }
        } else if (!b.is_boolean()) {
            fail("the schema at " + where(bptr) + " must be an object or a boolean");
        }
        alts.push_back(visit(merged, bptr, depth + 1));
    }
    if (alts.empty()) fail("no branch of \"" + key + "\" at " + where(ptr) + " can match");
    return gbnf_alt(alts);
}

} // namespace specd::grammar::schema
