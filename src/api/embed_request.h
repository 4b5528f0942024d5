#pragma once
// Embedding requests and answers: Ollama's /api/embed and legacy /api/embeddings, and
// OpenAI's /v1/embeddings. Bodies are validated here (every refusal a 400 naming the field
// or limit); the vectors the runner returns are shaped here (dimensions, normalization).
#include "core/json_input.h"
#include "core/request.h"
#include "scheduler/job.h"

#include <optional>
#include <string>
#include <vector>

namespace specd::api {

enum class EmbedEndpoint { embed, embeddings_legacy, openai };

struct EmbedRequest {
    EmbedEndpoint          endpoint = EmbedEndpoint::embed;
    std::string            model;   // as the client wrote it
    GenerateRequest        request; // request.embed holds the inputs; request.model filled in later
    json                   options; // the request's own options, applied over the model's
    std::optional<int32_t> dimensions;
    bool                   base64 = false; // OpenAI encoding_format "base64"
};

// Throws specd::Error(bad_request); the OpenAI decoder throws ParamError (openai_request.h).
EmbedRequest decode_embed(const json & body);
EmbedRequest decode_embeddings_legacy(const json & body);
EmbedRequest decode_openai_embed(const json & body);

// Keeps the first `dimensions` values (all when unset), then L2-normalizes when `normalize`.
// A `dimensions` above the vector's length is a bad_request.
std::vector<float> shape_embedding(std::vector<float> v, std::optional<int32_t> dimensions, bool normalize);

// The answer to a finished request, in its endpoint's shape.
json embed_answer_json(const EmbedRequest & r, scheduler::DoneInfo done);

inline constexpr size_t  k_max_embed_inputs = 256;     // inputs per request
inline constexpr int32_t k_max_embed_dimensions = 1 << 20;

} // namespace specd::api
