#pragma once
// What loading a model will cost, read from GGUF headers before any weight is loaded: the
// scheduler makes room for it (unloading idle models) and chooses how many sequences it gets.
#include "core/options.h"
#include "core/request.h"
#include "engine/draft_kind.h"

#include <cstdint>

namespace specd::scheduler {

struct LoadEstimate {
    int32_t  n_ctx      = 0;   // num_ctx, clamped to the model's trained context
    int32_t  num_batch  = 512; // as asked; a decode holds engine::batch_tokens() of it
    uint64_t weights    = 0;   // the model, draft and projector files
    uint64_t kv_per_seq = 0;   // f16 K and V for num_ctx tokens, target and draft together
    // Compute buffer bytes per token of a decode for its output: logits and hidden state,
    // 4 bytes x (vocabulary + width), the target's and (0 without one) the draft model's.
    uint64_t out_per_token       = 0;
    uint64_t draft_out_per_token = 0;
    // What drafts (engine/draft_kind): its micro-batches' size, and whether it has a KV cache.
    engine::DraftKind draft_kind = engine::DraftKind::model;
    // The embedding context a model gets on its first embedding request (engine/embedder):
    // KV for num_ctx tokens, a decode of num_ctx tokens (an input is one micro-batch, so this
    // grows with num_ctx squared), and an output row, logits included, for each of them.
    uint64_t embedder = 0;

    // llama.cpp sizes a context's compute buffer for its largest decode, the output's tensors
    // or the attention mask's (2 bytes per KV cell), whichever is larger (ggml reuses the
    // memory): a num_batch of 65536 on a 32k vocabulary and context is 17 GB. The target's
    // context (one KV for every sequence), and the draft's (one for every sequence too, its
    // micro-batches as engine::draft_ubatch says).
    uint64_t compute(int n_seq) const;
    uint64_t bytes(int n_seq) const { return weights + kv_per_seq * uint64_t(n_seq) + compute(n_seq); }
};

// Throws specd::Error(bad_request) when a file's header cannot be read.
LoadEstimate estimate_load(const ModelFiles & files, const ContextOptions & context);

// How many sequences a model gets when the server does not say: as many as fit `free_bytes`
// (weights, KV and compute), at most `k_default_parallel_max`, at least 1, and more than one
// only while their contexts together hold at most `k_default_parallel_tokens` (a long context
// is not multiplied unasked).
constexpr int     k_default_parallel_max    = 4;
constexpr int64_t k_default_parallel_tokens = int64_t(1) << 17;
int               default_parallel(const LoadEstimate & e, uint64_t free_bytes);

// The most tokens a model's KV may hold (num_ctx x sequences). llama.cpp allocates and clears
// the whole KV when a model loads: 2^21 tokens of even a tiny model take seconds to touch, and
// real models hold gigabytes per 2^20 tokens. Throws bad_request naming the limit above it.
constexpr int64_t k_max_context_tokens = int64_t(1) << 21;
void              check_context_size(const LoadEstimate & e, int n_seq);

// The machine's physical memory in bytes (0 when unknown).
uint64_t physical_memory_bytes();

} // namespace specd::scheduler
