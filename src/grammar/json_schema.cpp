#include "grammar/json_schema.h"

#include "core/error.h"

#include <json-schema-to-grammar.h>
#include <json.h>

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

} // namespace specd::grammar
