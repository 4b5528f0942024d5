#pragma once
// What loading a model will cost, read from GGUF headers before any weight is loaded: the
// scheduler makes room for it (unloading idle models) and chooses how many sequences it gets.
#include "core/options.h"
#include "core/request.h"

#include <cstdint>

namespace specd::scheduler {

struct LoadEstimate {
    uint64_t weights    = 0; // the model, draft and projector files
    uint64_t kv_per_seq = 0; // f16 K and V for num_ctx tokens, target and draft together
    uint64_t bytes(int n_seq) const { return weights + kv_per_seq * uint64_t(n_seq); }
};

// Throws specd::Error(bad_request) when a file's header cannot be read.
LoadEstimate estimate_load(const ModelFiles & files, const ContextOptions & context);

// How many sequences a model gets when the server does not say: as many as fit `free_bytes`
// next to the weights, at most `k_default_parallel_max`, at least 1.
constexpr int k_default_parallel_max = 4;
int           default_parallel(const LoadEstimate & e, uint64_t free_bytes);

// The machine's physical memory in bytes (0 when unknown).
uint64_t physical_memory_bytes();

} // namespace specd::scheduler
