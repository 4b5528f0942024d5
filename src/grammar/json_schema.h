#pragma once
// `format` -> GBNF: "json" (any JSON object) or a JSON schema, through the pinned llama.cpp's
// schema converter for now. The grammar is what the sampler enforces token by token.
#include <string>
#include <string_view>

namespace specd::grammar {

// Grammar for `format: "json"`: one JSON object.
std::string json_object_grammar();

// Grammar for a JSON schema given as JSON text. Throws specd::Error(bad_request) for a
// schema the converter rejects.
std::string schema_to_grammar(const std::string & schema_json);

// True when `text` (surrounding whitespace aside) is exactly one complete JSON value.
bool is_complete_json(std::string_view text);

} // namespace specd::grammar
