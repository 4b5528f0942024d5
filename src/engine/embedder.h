#pragma once
// Pooled text embeddings of a loaded model: a second llama context, created with
// `embeddings = true`, beside the generation one. Embedding models pool as their GGUF says;
// a generative model (no pooling type in its GGUF) is mean-pooled, as llama-embedding does.
// Several inputs share one batch, one sequence each.
#include "engine/context_memory.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <atomic>
#include <memory>
#include <vector>

namespace specd::engine {

class Embedder {
  public:
    // Throws specd::Error(bad_request) when the context cannot be created.
    Embedder(std::shared_ptr<Model> model, uint32_t n_ctx, int32_t n_threads);

    uint32_t             n_ctx() const { return n_ctx_; }
    int32_t              n_threads() const { return n_threads_; }
    int32_t              n_embd() const { return n_embd_; }
    enum llama_pooling_type pooling() const { return pooling_; }
    // What the context holds: its buffers as created, plus the output buffer's growth to the
    // largest batch so far (llama.cpp logs only the first size).
    ContextBytes memory() const { return {memory_.kv, memory_.compute + output_bytes_}; }

    // One pooled vector of n_embd() floats per input, not normalized. Every input must hold
    // 1..n_ctx() tokens (the caller truncates or refuses). Throws specd::Error: cancelled when
    // `cancel` is set meanwhile, internal when llama.cpp fails.
    std::vector<std::vector<float>> embed(const std::vector<std::vector<llama_token>> & inputs,
                                          const std::atomic<bool> & cancel);

  private:
    void run_batch(const std::atomic<bool> & cancel);

    std::shared_ptr<Model>    model_;
    uint32_t                  n_ctx_;
    int32_t                   n_threads_;
    int32_t                   n_embd_ = 0;
    enum llama_pooling_type   pooling_ = LLAMA_POOLING_TYPE_MEAN;
    context_ptr               ctx_;
    Batch                     batch_; // (n_ctx) tokens, each in one sequence
    ContextBytes              memory_;
    size_t                    output_bytes_ = 0; // the output buffer at the largest batch so far
    const std::atomic<bool> * cancel_ = nullptr; // set during embed(), read by llama's abort callback
};

} // namespace specd::engine
