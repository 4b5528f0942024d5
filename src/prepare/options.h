#pragma once
// Option resolution: the model's parameters, then the request's options, onto the request's
// option structs; and `format` into the grammar that enforces it.
#include "core/json_input.h"
#include "core/request.h"
#include "models/parameters.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace specd::prepare {

// Model parameters, then the request's options, onto the request's option structs. An
// option the server does not know is ignored with a line in `warnings` (as Ollama); a known
// one with an invalid value is a bad_request.
void apply_options(const models::Parameters & model_params, const json & request_options, GenerateRequest & req,
                   std::vector<std::string> & warnings);

// `format` -> grammar: "json", a JSON-schema object, or absent. Schema keywords accepted
// without being enforced are named in `unenforced` (null: they are a bad_request).
std::string format_grammar(const json & format, std::vector<std::string> * unenforced = nullptr);

inline constexpr int32_t k_max_num_ctx     = 1 << 24;
inline constexpr int32_t k_max_num_predict = 1 << 24;
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

} // namespace specd::prepare
