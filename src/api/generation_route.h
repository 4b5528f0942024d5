#pragma once
// One loop serves every generation, whatever its API: resolve the model, queue the request,
// wait for the first event (an error before any output is a real HTTP status), then answer
// whole or stream the events through the request's writer (Ollama's NDJSON, OpenAI's SSE).
// A client that leaves, or a stream write that fails, cancels the job.
#include "api/generation_writer.h"
#include "api/ollama_request.h"
#include "api/routes.h"

#include <functional>
#include <memory>

namespace specd::api {

// Given the resolved model's name, the writer that shapes the answer.
using WriterFactory = std::function<std::unique_ptr<GenerationWriter>(const std::string & model)>;

void serve_generation(const RouteContext & ctx, http::Request & req, http::Response & res, DecodedRequest d,
                      const WriterFactory & make_writer);

} // namespace specd::api
