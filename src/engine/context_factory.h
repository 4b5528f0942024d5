#pragma once
// Creating a llama context: the one place that turns llama.cpp's refusal into an error a
// user can act on, measures what the context allocated (context_memory), and gives llama.cpp
// an abort callback that reads the owner's cancel flag.
#include "engine/context_memory.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <atomic>
#include <string>

namespace specd::engine {

struct CreatedContext {
    context_ptr  ctx;
    ContextBytes bytes; // its KV and compute buffers
};

// Throws specd::Error(bad_request) "<what>: <llama.cpp's reason>" when the context cannot be
// created (the reason is left out when llama.cpp logged none).
CreatedContext create_context(const Model & model, const llama_context_params & params, const std::string & what);

// An abort callback for llama_context_params: `data` is the address of the owner's
// `const std::atomic<bool> *` cancel pointer (null while nothing can be cancelled).
bool abort_when_cancelled(void * data);

} // namespace specd::engine
