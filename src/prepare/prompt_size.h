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
#include <string_view>

namespace specd::prepare {

// Ordinary text is 3 to 5 bytes a token: 64 bytes per token of context is a prompt at least
// ten times over it. 16 MiB is more than any context a model may hold (2^21 tokens) keeps.
inline constexpr size_t k_prompt_bytes_per_ctx_token = 64;
inline constexpr size_t k_min_prompt_text_limit      = size_t(4) << 20;
inline constexpr size_t k_max_prompt_text_limit      = size_t(16) << 20;

// 64 bytes x num_ctx, at least 4 MiB, at most 16 MiB.
size_t prompt_text_limit(int32_t num_ctx);

// The bytes of text a request renders: prompt, system, suffix, every message's content,
// reasoning and tool calls, and the tools offered.
size_t prompt_text_bytes(const PromptInput & p);

// Throws bad_request naming the limit when the request's text is over it.
void check_prompt_text(const PromptInput & p, int32_t num_ctx);

// The same before a body is parsed (parsing copies every string two or three times): the
// decoded bytes of the strings under "prompt", "system", "suffix", "content", "thinking",
// "text" and "input" (embeddings) keys of a raw JSON body (a lower bound of its prompt text).
// Throws bad_request when they are over k_max_prompt_text_limit, which no num_ctx allows (an
// embedding keeps at most num_ctx tokens of each input). A malformed body is left to the
// parser.
size_t raw_prompt_text_bytes(std::string_view body);
void   check_raw_prompt_text(std::string_view body);

} // namespace specd::prepare
