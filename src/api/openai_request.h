#pragma once
// OpenAI's /v1/chat/completions and /v1/completions bodies -> the GenerateRequest that
// /api/chat and /api/generate make (ollama_request.h), validated at the edge. Every refusal
// is a ParamError naming the field as OpenAI's error `param` does ("messages[0].content[1]
// .image_url.url"); fields specd does not implement yet (tools, logit_bias, n > 1, ...) are
// refused, never ignored.
#include "api/ollama_request.h"
#include "core/error.h"

#include <string>

namespace specd::api {

// The field, or nullptr when it is absent or null (OpenAI's clients send nulls for unset
// fields): how every /v1 decoder reads a body.
const json * field(const json & obj, const char * key);

struct OpenAIRequest {
    // The request in /api/chat's or /api/generate's terms: sampling fields become Ollama
    // options (temperature, top_p, seed, num_predict, stop, presence/frequency_penalty),
    // applied over the model's PARAMETERs like any request's; response_format is `format`.
    DecodedRequest decoded;
    bool           include_usage = false; // stream_options.include_usage: a last chunk with usage
};

// messages: string content, or arrays of text and image_url parts (data:image/...;base64,
// URLs only: images decoded within `limits`, in request order).
OpenAIRequest decode_openai_chat(const json & body, const ImageLimits & limits = {});
// prompt: a string (or an array holding one string); suffix.
OpenAIRequest decode_openai_completion(const json & body);

// OpenAI's documented ranges, checked here so that an error names OpenAI's field.
inline constexpr double k_openai_max_temperature = 2.0;
inline constexpr double k_openai_max_penalty     = 2.0; // presence_penalty, frequency_penalty: -2..2

} // namespace specd::api
