#pragma once
// Token log-probabilities as JSON, in the shape Ollama and OpenAI chat share:
// [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}].
// `token` is the piece as valid UTF-8 (a partial sequence becomes U+FFFD); `bytes` are its
// exact bytes.
#include "core/json_input.h"
#include "core/logprobs.h"

#include <vector>

namespace specd::api {

// `always_top`: OpenAI lists top_logprobs (maybe empty) on every entry; Ollama omits it when empty.
json logprobs_json(const std::vector<TokenLogprob> & logprobs, bool always_top);

} // namespace specd::api
