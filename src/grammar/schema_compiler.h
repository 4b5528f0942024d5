#pragma once
// JSON Schema -> GBNF for compact JSON (no whitespace between tokens), so the structure is
// forced: after `"label":"cat"` the only continuation is `,"bbox":[`. Properties come in the
// schema's declared order. Whatever the compiler cannot enforce exactly is named, keyword and
// place, never a silent "any value": a warning the client sees (as Ollama, the request is
// served) or, strict, a 400. docs/grammar.md lists what is enforced and the generation
// policies (absent additionalProperties, unanchored patterns).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace specd::grammar {

// Bounds on the work and output one schema may cause; each error message names its limit.
struct SchemaLimits {
    int      max_depth          = 64;      // subschemas nested in one another ($ref hops count)
    int      max_json_depth     = 256;     // nesting of the schema document's own JSON text
    size_t   max_nodes          = 10000;   // subschemas compiled in all
    size_t   max_enum           = 10000;   // values in one enum
    uint64_t max_repeat         = 10000;   // minItems, maxItems, minLength, maxLength, pattern counts
    size_t   max_pattern_length = 1000;    // bytes of one pattern
    int      max_pattern_depth  = 32;      // group nesting in one pattern
    size_t   max_grammar_bytes  = 1 << 20; // GBNF text produced
};

// GBNF with root rule `root`. Throws specd::Error(bad_request) for malformed keywords and for
// exceeded limits. What it cannot enforce (uniqueItems, not, if/then/else, an unknown format,
// ... : docs/grammar.md has the table) is, with `unenforced`, accepted and named there (one
// sentence per keyword and place; the value is generated without it), and without it (strict)
// a bad_request.
std::string compile_schema(const nlohmann::ordered_json & schema, const SchemaLimits & limits = {},
                           std::vector<std::string> * unenforced = nullptr);

} // namespace specd::grammar
