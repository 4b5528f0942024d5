#include "grammar/json_schema.h"

#include "core/error.h"

#include <json-schema-to-grammar.h>
#include <json.h>
#include <nlohmann/json.hpp>

namespace specd::grammar {

std::string json_object_grammar() {
    return schema_to_grammar(R"({"type":"object"})");
}

std::string schema_to_grammar(const std::string & schema_json) {
    try {
        return json_schema_to_grammar(common_json::parse(schema_json));
    } catch (const std::exception & e) {
        throw bad_request(std::string("invalid format: ") + e.what() +
                          "; expected \"json\" or a valid JSON Schema object");
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
