#pragma once
// `format` -> GBNF: "json" (any JSON object) or a JSON schema (schema_compiler.h). The grammar
// is what the sampler enforces token by token.
#include "grammar/schema_compiler.h"

#include <string>
#include <string_view>
#include <vector>

namespace specd::grammar {

// Grammar for `format: "json"`: one JSON object with whitespace where llama.cpp's converter
// allows it (after { [ : , and before } ]), each gap bounded (one space, or one or two
// newlines and up to 20 spaces or tabs) so a model cannot write whitespace forever. None
// before the object or after it.
std::string json_object_grammar();

// Grammar for a JSON schema given as JSON text: compact JSON, properties in declared order.
// Throws specd::Error(bad_request), message starting "invalid format: ", for text that is
// not JSON, a schema the compiler cannot enforce, or a limit exceeded.
// With `unenforced`, what the compiler accepts without enforcing is named there instead
// (compile_schema).
std::string schema_to_grammar(const std::string & schema_json);
std::string schema_to_grammar(const std::string & schema_json, const SchemaLimits & limits,
                              std::vector<std::string> * unenforced = nullptr);

// True when `text` (surrounding whitespace aside) is exactly one complete JSON value.
bool is_complete_json(std::string_view text);

} // namespace specd::grammar
