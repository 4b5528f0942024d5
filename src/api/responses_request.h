#pragma once
// OpenAI's Responses API request (POST /v1/responses) as a chat completion: `instructions`
// and `input` (a string, or items: messages with input_text / input_image / output_text
// parts, function_call and function_call_output) become chat messages; `tools`
// ({type: "function", name, ...}), `text.format`, `reasoning`, `max_output_tokens`,
// `temperature`, `top_p` their chat fields. The result goes through decode_openai_chat, so
// every check is the chat route's. specd keeps no responses: `previous_response_id`,
// `conversation` and `background` are a 400 naming the field, as is a tool that is not a
// function (web search, file search, ...).
#include "api/openai_request.h"

namespace specd::api {

// The chat completions body for a Responses body; ParamError names a Responses field.
json responses_to_chat(const json & body);

OpenAIRequest decode_openai_responses(const json & body, const ImageLimits & limits = {});

} // namespace specd::api
