#pragma once
// Ollama's /api/generate and /api/chat bodies -> GenerateRequest, validated at the edge:
// wrong types, out-of-range options, unknown roles and fields specd does not implement yet
// are 400s that name the field, never silently ignored.
#include "api/json_input.h"
#include "core/request.h"
#include "models/parameters.h"
#include "vision/image_limits.h"

#include <optional>
#include <string>

namespace specd::api {

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
    // warnings, or with SPECD_STRICT_SCHEMA a 400 (serve_generation decides).
    std::vector<std::string> schema_unenforced;
};

// Images (base64) are decoded here, within `limits`: every violation is a 400 naming it.
DecodedRequest decode_generate(const json & body, const vision::ImageLimits & limits = {});
DecodedRequest decode_chat(const json & body, const vision::ImageLimits & limits = {});

// Model parameters, then the request's options, onto the request's option structs. An
// option the server does not know is ignored with a line in `warnings` (as Ollama); a known
// one with an invalid value is a bad_request.
void apply_options(const models::Parameters & model_params, const json & request_options, GenerateRequest & req,
                   std::vector<std::string> & warnings);

// keep_alive: a number of seconds or a Go-style duration ("5m", "1h30m", "0", "-1").
std::optional<KeepAlive> parse_keep_alive(const json & value);

// `format` -> grammar: "json", a JSON-schema object, or absent. Schema keywords accepted
// without being enforced are named in `unenforced` (null: they are a bad_request).
std::string format_grammar(const json & format, std::vector<std::string> * unenforced = nullptr);

inline constexpr int32_t k_max_num_ctx     = 1 << 24;
inline constexpr int32_t k_max_num_predict = 1 << 24;
inline constexpr size_t  k_max_keep_alive_chars = 64;
// The composed grammar holds a rule per 32 characters of budget: 2048 rules here (measured on
// think.gguf: as fast as a budget of 48); a million characters would pass the grammar's size
// limit, and a reasoning that long is num_predict's to bound.
inline constexpr int64_t k_max_thinking_budget_chars = 1 << 16;
// Sampling options in floats (see apply_options): |temperature| and the penalties at most
// k_max_sampling_factor; repeat_penalty at least k_min_repeat_penalty; a temperature below
// k_min_temperature is greedy decoding.
inline constexpr double k_max_sampling_factor = 1e6;
inline constexpr double k_min_repeat_penalty  = 1e-6;
inline constexpr double k_min_temperature     = 1e-6;

} // namespace specd::api
