#pragma once
// A request as api/ decoded it from its body, before preparation (prepare/generation.h):
// validated field by field, its model not yet resolved and its options not yet applied.
#include "core/json_input.h"
#include "core/request.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specd::prepare {

struct DecodedRequest {
    std::string     model;   // as the client wrote it
    bool            stream = true;
    GenerateRequest request; // request.model is filled in later from the store
    json            options; // the request's own options, applied over the model's
    // With `think` and `format`: the reasoning before the answer is at most this many
    // characters (not tokens: the grammar counts characters), then the template's end tag
    // and the answer are forced. Unset: the reasoning may run until num_predict.
    std::optional<int64_t> thinking_budget_chars;
    // What the request asked for that the server did not honour (an unknown option, a schema
    // keyword it accepts without enforcing): logged, and listed in the final response.
    std::vector<std::string> warnings;
    // Keywords of the `format` schema accepted without being enforced (grammar::compile_schema):
    // warnings, or with SPECD_STRICT_SCHEMA a 400 (prepare_generation decides).
    std::vector<std::string> schema_unenforced;
};

} // namespace specd::prepare
