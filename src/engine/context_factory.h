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

// Parameters for `n_seq` sequences of `n_ctx` tokens each in one KV cache (llama.cpp's
// unified KV: a batch may mix a long prompt chunk with single-token rounds of other sequences
// in one micro-batch), decoding batches of up to `n_batch` tokens. The owner holds each
// sequence to n_ctx tokens, so the cache is n_ctx per sequence, as Ollama sizes it. The cache
// type and flash attention are the server's (engine/kv_cache_type). Threads and callbacks are
// left at llama.cpp's defaults.
llama_context_params sequences_params(uint32_t n_ctx, int n_seq, int32_t n_batch);
// The same with the model's own cache type (engine/kv_cache_type: kv_cache_type_for).
llama_context_params sequences_params(const Model & model, uint32_t n_ctx, int n_seq, int32_t n_batch);

// An abort callback for llama_context_params: `data` is the address of the owner's
// `const std::atomic<bool> *` cancel pointer (null while nothing can be cancelled).
bool abort_when_cancelled(void * data);

} // namespace specd::engine
