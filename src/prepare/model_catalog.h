#pragma once
// The store as the API shows it: resolving a request's model name, and the bodies of
// /api/tags, /api/show, /api/delete and /api/copy.
#include "core/json_input.h"
#include "core/request.h"
#include "engine/quantizer.h"
#include "models/store.h"

#include <functional>
#include <string>

namespace specd::prepare {

struct ServedModel {
    ModelFiles           files;
    models::Parameters   params;
    std::vector<Message> messages; // the Modelfile's MESSAGEs: a chat's history starts with them
};

// Throws specd::Error: bad_request for an invalid name, not_found for an unknown model.
ServedModel catalog_resolve(const models::Store & store, const std::string & name);

json catalog_tags(const models::Store & store);
// `verbose`: Ollama's show with verbose: the tokenizer's arrays in model_info and `tensors`
// ({name, type, shape}).
json catalog_show(const models::Store & store, const std::string & name, bool verbose = false);
void catalog_delete(models::Store & store, const std::string & name);
void catalog_copy(models::Store & store, const std::string & source, const std::string & destination);

// Ollama's structured /api/create: {model, from | files, system, parameters, ...}. `from`
// names a stored model; `files` maps file names to blob digests already uploaded through
// /api/blobs (the first .gguf one is the model); `adapters` maps LoRA file names to uploaded
// digests; `quantize` (e.g. "q4_K_M") quantizes an F32/F16/BF16 model while it is stored,
// `draft_quantize` its draft model; the draft as `draft_files` (Ollama's: one file name ->
// uploaded digest) or `draft` (specd's: a stored model or a digest); `renderer`, `parser`,
// `requires` kept in the config; `name` for `model` (Ollama's older field).
// Paths are never taken from a client. `tensors` hears quantization's tensor count as it
// goes.
void catalog_create(models::Store & store, const json & body, const std::function<void(const std::string &)> & progress,
                    const engine::TensorProgress & tensors = {});

// Ollama lists digests as bare hex ("a2af..."), without the "sha256:" prefix.
std::string bare_digest(const std::string & digest);

// The config blob's details from a GGUF header (for create).
models::ModelConfig describe_gguf(const std::filesystem::path & gguf);

// Create-time check of a DRAFT: its vocabulary must be the model's (a 400 naming the
// difference otherwise).
void check_draft_vocab(const std::filesystem::path & model_gguf, const std::filesystem::path & draft_gguf);

// Create-time check of an ADAPTER (a 400 naming what does not fit the model otherwise).
void check_adapter_fits(const std::filesystem::path & model_gguf, const std::filesystem::path & adapter_gguf);

// Create-time check of a vision projector: its type must be one the server serves and the
// text model one that takes images (engine/projector_types; a 400 naming why otherwise).
void check_projector_fits(const std::filesystem::path & projector_gguf, const std::filesystem::path & model_gguf);

// CreateOptions::rewrite_model for a quantization type a user named ("q4_K_M"); throws
// bad_request for an unknown type.
std::function<void(const std::filesystem::path &, const std::filesystem::path &)>
quantize_rewrite(const std::string & type, std::function<void(const std::string &)> progress,
                 engine::TensorProgress tensors = {});

// The create options every create path uses: GGUF details and the DRAFT and ADAPTER checks.
models::CreateOptions create_options(std::function<void(const std::string &)> progress);

} // namespace specd::prepare
