// JSON Schema -> GBNF (schema_compiler.h): the entry, the walk over subschemas, each
// keyword's shape checked, and the rules every type shares (string, number, any value).
#include "grammar/schema_compiler.h"

#include "core/error.h"
#include "core/utf8.h"
#include "grammar/numeric_range.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/schema_compiler_impl.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace specd::grammar::schema {

namespace {

// Keywords that do not constrain the value. `discriminator` is OpenAPI's (pydantic writes it
// beside oneOf); the oneOf itself carries the constraint.
const std::set<std::string> k_annotations = {"title",   "description", "$schema",  "$id",       "$comment",
                                             "default", "examples",    "deprecated", "readOnly", "writeOnly",
                                             "$defs",   "definitions", "discriminator"};

// Keywords this compiler reads, grouped by the type they constrain (some enforced only where
// they can be: minProperties, maxProperties, multipleOf, uniqueItems false).
const std::set<std::string> k_object_keys = {"properties", "required", "additionalProperties", "minProperties", "maxProperties"};
const std::set<std::string> k_array_keys  = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"};
const std::set<std::string> k_string_keys = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> k_number_keys = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"};
const std::set<std::string> k_general_keys = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};
// Assertions a grammar over the value cannot express (they relate parts of the value to one
// another, or negate a schema), or not at a sane size: accepted, not enforced.
const std::set<std::string> k_beyond_grammar = {"not", "if", "then", "else", "contains", "minContains", "maxContains",
                                                "patternProperties", "propertyNames", "dependentRequired",
                                                "dependentSchemas", "dependencies", "unevaluatedProperties",
                                                "unevaluatedItems"};

const std::vector<std::string> k_types = {"null", "boolean", "object", "array", "string", "integer", "number"};

bool is_count(const json & v) {
    if (v.is_number_integer()) return v.is_number_unsigned() || v.get<int64_t>() >= 0;
    return v.is_number_float() && v.get<double>() >= 0 && std::floor(v.get<double>()) == v.get<double>();
}

} // namespace

[[noreturn]] void fail(const std::string & message) { throw bad_request(message); }

std::string where(const std::string & ptr) { return ptr.empty() ? "/" : ptr; }

std::string child(const std::string & ptr, const std::string & token) {
    std::string out = ptr + "/";
    for (char c : token) {
        if (c == '~') out += "~0";
        else if (c == '/') out += "~1";
        else out += c;
    }
    return out;
}

std::string json_quote(const std::string & s) { return json(s).dump(); }

bool is_assertion(const std::string & key) { return !k_annotations.count(key); }

// Splits UTF-8 text into characters (each a string of 1-4 bytes).
std::vector<std::string> utf8_units(const std::string & s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const size_t n = std::max<size_t>(decode_utf8(std::string_view(s).substr(i)).len, 1);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

void Trie::insert(const std::vector<std::string> & units) {
    size_t n = 0;
    for (const auto & u : units) {
        auto it = nodes[n].kids.find(u);
        if (it == nodes[n].kids.end()) {
            nodes.push_back(Node{});
            it = nodes[n].kids.emplace(u, nodes.size() - 1).first;
        }
        n = it->second;
    }
    nodes[n].end = true;
}

std::string Compiler::run() {
    const auto root = g_.reserve("root");
    refs_[""] = root;
    enter("", 0);
    g_.define(root, body(root_, "", 0));
    if (unenforced_) { // a subschema reached twice ($ref) is named once
        std::vector<std::string> once;
        for (auto & w : *unenforced_) {
            if (std::find(once.begin(), once.end(), w) == once.end()) once.push_back(std::move(w));
        }
        *unenforced_ = std::move(once);
    }
    return g_.text();
}

void Compiler::not_enforced(const std::string & key, const std::string & ptr, const std::string & why) {
    const std::string what = "\"" + key + "\" at " + where(ptr);
    if (!unenforced_) fail("unsupported JSON schema feature " + what + " (" + why + ")");
    unenforced_->push_back(what + " is not enforced (" + why + ")");
}

// --- traversal

void Compiler::enter(const std::string & ptr, int depth) {
    if (depth > lim_.max_depth)
        fail("schema nesting at " + where(ptr) + " exceeds the limit max_depth (" + std::to_string(lim_.max_depth) + ")");
    if (++nodes_ > lim_.max_nodes)
        fail("the schema has more than max_nodes (" + std::to_string(lim_.max_nodes) + ") subschemas");
}

// A rule name for the subschema.
std::string Compiler::visit(const json & s, const std::string & ptr, int depth) {
    enter(ptr, depth);
    const auto expr = body(s, ptr, depth);
    return gbnf_is_name(expr) ? expr : g_.add(hint(ptr), expr);
}

std::string Compiler::hint(const std::string & ptr) {
    const auto slash = ptr.rfind('/');
    if (slash == std::string::npos) return "root";
    const auto last = ptr.substr(slash + 1);
    const bool index = !last.empty() && std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!index || slash == 0) return last;
    const auto prev = ptr.rfind('/', slash - 1);
    return ptr.substr(prev + 1, slash - prev - 1) + "-" + last;
}

// GBNF expression for one subschema.
std::string Compiler::body(const json & s, const std::string & ptr, int depth) {
    if (s.is_boolean()) {
        if (!s.get<bool>()) fail("the schema at " + where(ptr) + " is false: no value can match");
        return any_value();
    }
    if (!s.is_object()) fail("the schema at " + where(ptr) + " must be an object or a boolean");
    check_shapes(s, ptr);
    for (const auto & [key, value] : s.items()) {
        if (key == "uniqueItems" && value.get<bool>()) {
            not_enforced(key, ptr, "items are generated independently of one another");
            continue;
        }
        if (!is_assertion(key) || k_general_keys.count(key) || k_object_keys.count(key) || k_array_keys.count(key) ||
            k_string_keys.count(key) || k_number_keys.count(key))
            continue;
        not_enforced(key, ptr, k_beyond_grammar.count(key) ? "a grammar over the value cannot express it" : "an unknown keyword");
    }

    if (s.contains("$ref")) {
        for (const auto & [key, value] : s.items())
            if (key != "$ref" && is_assertion(key))
                fail("keyword \"" + key + "\" beside \"$ref\" at " + where(ptr) + " is not supported");
        return ref(s["$ref"].get<std::string>(), ptr, depth);
    }
    std::vector<std::string> combinators;
    for (const char * c : {"anyOf", "oneOf", "allOf"})
        if (s.contains(c)) combinators.push_back(c);
    if (combinators.size() > 1)
        fail("unsupported JSON schema feature: \"" + combinators[0] + "\" together with \"" + combinators[1] + "\" at " + where(ptr));
    if (!combinators.empty()) return combine(s, combinators[0], ptr, depth);
    if (s.contains("enum") || s.contains("const")) return enumeration(s, ptr);

    const auto types = type_set(s);
    if (types.empty()) return any_value();
    std::vector<std::string> alts;
    for (const auto & t : types) alts.push_back(typed(t, s, ptr, depth));
    return gbnf_alt(alts);
}

// Types the value may have: "type", else the types whose keywords appear (a schema with
// only "properties" means an object); empty: anything.
std::vector<std::string> Compiler::type_set(const json & s) const {
    std::set<std::string> set;
    if (s.contains("type")) {
        if (s["type"].is_string()) set.insert(s["type"].get<std::string>());
        else for (const auto & t : s["type"]) set.insert(t.get<std::string>());
    } else {
        for (const auto & [key, value] : s.items()) {
            if (k_object_keys.count(key)) set.insert("object");
            if (k_array_keys.count(key)) set.insert("array");
            if (k_string_keys.count(key)) set.insert("string");
            if (k_number_keys.count(key)) set.insert("number");
        }
    }
    if (set.count("number")) set.erase("integer"); // every integer is a number
    std::vector<std::string> out;
    for (const auto & t : k_types)
        if (set.count(t)) out.push_back(t);
    return out;
}

std::string Compiler::typed(const std::string & type, const json & s, const std::string & ptr, int depth) {
    if (type == "null") return "\"null\"";
    if (type == "boolean") return prim("boolean", R"("true" | "false")");
    if (type == "object") return object(s, ptr, depth);
    if (type == "array") return array(s, ptr, depth);
    if (type == "string") return string(s, ptr);
    if (type == "integer") return integer(s, ptr);
    return number(s, ptr);
}

// --- keyword shapes

void Compiler::check_shapes(const json & s, const std::string & ptr) const {
    const auto bad = [&](const std::string & key, const std::string & what) {
        fail("\"" + key + "\" at " + where(ptr) + " must be " + what);
    };
    for (const auto & [key, v] : s.items()) {
        if (key == "type") {
            const auto ok_name = [](const json & t) {
                return t.is_string() && std::find(k_types.begin(), k_types.end(), t.get<std::string>()) != k_types.end();
            };
            const bool ok = ok_name(v) || (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), ok_name));
            if (!ok) bad(key, "one of null, boolean, object, array, string, integer, number, or a non-empty array of them");
        } else if (key == "enum") {
            if (!v.is_array() || v.empty()) bad(key, "a non-empty array");
            if (v.size() > lim_.max_enum)
                fail("\"enum\" at " + where(ptr) + " has " + std::to_string(v.size()) + " values, above the limit max_enum (" +
                     std::to_string(lim_.max_enum) + ")");
        } else if (key == "anyOf" || key == "oneOf" || key == "allOf" || key == "prefixItems") {
            if (!v.is_array() || v.empty()) bad(key, "a non-empty array of schemas");
        } else if (key == "$ref" || key == "pattern" || key == "format") {
            if (!v.is_string()) bad(key, "a string");
        } else if (key == "properties") {
            if (!v.is_object()) bad(key, "an object of schemas");
        } else if (key == "required") {
            if (!v.is_array() || !std::all_of(v.begin(), v.end(), [](const json & x) { return x.is_string(); }))
                bad(key, "an array of strings");
        } else if (key == "additionalProperties" || key == "additionalItems") {
            if (!v.is_boolean() && !v.is_object()) bad(key, "a schema");
        } else if (key == "items") {
            if (!v.is_boolean() && !v.is_object() && !v.is_array()) bad(key, "a schema or an array of schemas");
        } else if (key == "uniqueItems") {
            if (!v.is_boolean()) bad(key, "a boolean");
        } else if (key == "minProperties" || key == "maxProperties") {
            if (!is_count(v)) bad(key, "a non-negative integer");
        } else if (key == "multipleOf") {
            if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) bad(key, "a number above 0");
        } else if (key == "minItems" || key == "maxItems" || key == "minLength" || key == "maxLength") {
            if (!is_count(v)) bad(key, "a non-negative integer");
            if (v.get<double>() > static_cast<double>(lim_.max_repeat))
                fail("\"" + key + "\" " + v.dump() + " at " + where(ptr) + " exceeds the limit max_repeat (" +
                     std::to_string(lim_.max_repeat) + ")");
        } else if (k_number_keys.count(key)) {
            if (!v.is_number()) bad(key, "a number");
        }
    }
    for (const auto & [lo, hi] : {std::pair{"minItems", "maxItems"}, {"minLength", "maxLength"}}) {
        if (s.contains(lo) && s.contains(hi) && s[lo].get<double>() > s[hi].get<double>())
            fail("\"" + std::string(lo) + "\" (" + s[lo].dump() + ") is greater than \"" + hi + "\" (" + s[hi].dump() +
                 ") at " + where(ptr));
    }
}

uint64_t Compiler::count(const json & s, const char * key, uint64_t fallback) {
    return s.contains(key) ? static_cast<uint64_t>(s[key].get<double>()) : fallback;
}

// --- shared rules

std::string Compiler::prim(const std::string & name, const std::string & body) {
    auto & r = prims_[name];
    if (r.empty()) r = g_.add(name, body);
    return r;
}

std::string Compiler::string_rule() { return prim("string", "\"\\\"\" " + json_char_rule(g_) + "* \"\\\"\""); }

std::string Compiler::int_digits() {
    return "(\"0\" | [1-9] [0-9]{0," + std::to_string(k_max_int_digits - 1) + "})";
}

std::string Compiler::integer_rule() { return prim("integer", "\"0\" | \"-\"? [1-9] [0-9]{0," + std::to_string(k_max_int_digits - 1) + "}"); }

std::string Compiler::number_rule() {
    return prim("number", "\"-\"? " + int_digits() + " (\".\" [0-9]{1," + std::to_string(k_max_int_digits) +
                              "})? " + k_gbnf_json_exponent);
}

// Any JSON value, compact.
std::string Compiler::any_value() {
    auto & r = prims_["value"];
    if (!r.empty()) return r;
    r               = g_.reserve("value");
    const auto str  = string_rule();
    const auto obj  = g_.add("object", "\"{\" (" + str + " \":\" " + r + " (\",\" " + str + " \":\" " + r + ")*)? \"}\"");
    const auto arr  = g_.add("array", "\"[\" (" + r + " (\",\" " + r + ")*)? \"]\"");
    g_.define(r, obj + " | " + arr + " | " + str + " | " + number_rule() + " | " + prim("boolean", R"("true" | "false")") +
                     " | \"null\"");
    return r;
}

} // namespace specd::grammar::schema

namespace specd::grammar {

std::string compile_schema(const nlohmann::ordered_json & schema, const SchemaLimits & limits,
                           std::vector<std::string> * unenforced) {
    return schema::Compiler(schema, limits, unenforced).run();
}

} // namespace specd::grammar
