#include "grammar/json_schema.h"

#include "core/error.h"
#include "core/json_depth.h"
#include "grammar/gbnf.h"

#include <nlohmann/json.hpp>

namespace specd::grammar {

// Whitespace where llama.cpp's converter puts it for {"type":"object"} (what `format: "json"`
// produced before): after '{', '[', ':' and ',', and before '}' and ']'; each gap is one
// space, or one or two newlines and up to 20 spaces or tabs.
std::string json_object_grammar() {
    return R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (string ":" ws value ("," ws string ":" ws value)*)? ws "}"
array ::= "[" ws (value ("," ws value)*)? ws "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? )" + std::string(k_gbnf_json_exponent) + R"(
ws ::= | " " | "\n"{1,2} [ \t]{0,20}
)";
}

std::string schema_to_grammar(const std::string & schema_json) { return schema_to_grammar(schema_json, SchemaLimits{}); }

std::string schema_to_grammar(const std::string & schema_json, const SchemaLimits & limits,
                              std::vector<std::string> * unenforced) {
    if (json_nesting_depth(schema_json) > limits.max_json_depth) {
        throw bad_request("invalid format: the schema's JSON nesting exceeds the limit max_json_depth (" +
                          std::to_string(limits.max_json_depth) + ")");
    }
    nlohmann::ordered_json schema;
    try {
        // ordered_json keeps the properties in the order the schema declares them.
        schema = nlohmann::ordered_json::parse(schema_json);
    } catch (const std::exception & e) {
        throw bad_request(std::string("invalid format: ") + e.what() + "; expected \"json\" or a valid JSON Schema object");
    }
    try {
        return compile_schema(schema, limits, unenforced);
    } catch (const Error & e) {
        throw bad_request(std::string("invalid format: ") + e.what());
    }
}

bool is_complete_json(std::string_view text) {
    const auto last = text.find_last_not_of(" \t\r\n");
    // Only an object, array or string can be complete and still be extended by nothing but
    // whitespace; checking the last character first keeps this cheap per token.
    if (last == std::string_view::npos || (text[last] != '}' && text[last] != ']' && text[last] != '"')) return false;
    return nlohmann::json::accept(text);
}

} // namespace specd::grammar
