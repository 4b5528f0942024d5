#pragma once
// The layer between HTTP and the scheduler: a decoded request becomes a job the scheduler
// can run. The model is resolved in the store (its MESSAGEs start a chat), the request's
// options are applied over the model's parameters, the prompt's size is checked before
// anything renders it, and `think` and `tools` meet the model's template, which also makes
// the reader of the answer (answer_reader.h).
#include "core/request.h"
#include "models/store.h"
#include "prepare/answer_reader.h"
#include "prepare/decoded_request.h"

#include <cstdint>
#include <string>
#include <vector>

namespace specd::prepare {

// The server's settings that shape every request (`specd serve`'s flags and SPECD_*).
struct Settings {
    int32_t default_num_ctx    = 4096;  // CONTEXT_LENGTH: before the model's and the request's num_ctx
    bool    strict_schema      = false; // STRICT_SCHEMA: a schema keyword not enforced is a 400
    bool    no_draft           = false; // NO_DRAFT: speculation off
    bool    unseeded_rejection = true;  // UNSEEDED_SAMPLING: rejection sampling without a seed
};

struct PreparedGeneration {
    std::string              model_name; // the stored model's, e.g. "tiny:latest"
    GenerateRequest          request;    // ready for scheduler::Scheduler::submit
    AnswerReader             reader;     // splits the answer the way the model's template writes it
    std::vector<std::string> warnings;   // what was not honoured; logged here, listed in the answer
};

// Throws specd::Error: not_found for an unknown model, bad_request for what the request asks
// that the model or the server cannot do.
PreparedGeneration prepare_generation(const models::Store & store, const Settings & settings, DecodedRequest d);

// An embedding: the model resolved and the request's options applied to `request` (whose
// `embed` holds the inputs). Warnings are logged: an embedding answer has no place for them.
void prepare_embedding(const models::Store & store, const Settings & settings, const std::string & model,
                       const json & options, GenerateRequest & request);

} // namespace specd::prepare
