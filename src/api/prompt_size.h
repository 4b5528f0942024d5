#pragma once
// How much prompt text one request may bring. A chat template is rendered over the whole
// text (llama.cpp's template engine copies it several times: seconds and hundreds of MB for
// tens of MB), while truncation keeps only the last num_ctx tokens of the result: a text far
// beyond what the context holds is refused before anything is rendered or tokenized. Below
// the limit, a prompt over the context is truncated as Ollama does (engine/prompt_ends.h
// tokenizes only the ends that truncation keeps).
#include "core/request.h"

#include <cstddef>
#include <cstdint>

namespace specd::api {

// Ordinary text is 3 to 5 bytes a token: 64 bytes per token of context is a prompt at least
// ten times over it.
inline constexpr size_t k_prompt_bytes_per_ctx_token = 64;
inline constexpr size_t k_min_prompt_text_limit      = size_t(4) << 20;

// max(4 MiB, 64 bytes x num_ctx).
size_t prompt_text_limit(int32_t num_ctx);

// The bytes of text a request renders: prompt, system, suffix, every message's content,
// reasoning and tool calls, and the tools offered.
size_t prompt_text_bytes(const PromptSpec & p);

// Throws bad_request naming the limit when the request's text is over it.
void check_prompt_text(const PromptSpec & p, int32_t num_ctx);

} // namespace specd::api
