#pragma once
// Owning handles for every llama.cpp / mtmd / gguf C object specd uses. Nothing else in the
// code base calls a *_free function directly.
#include <ggml-cpp.h> // ggml_context_ptr: metadata-only tensor contexts of GGUF headers
#include <ggml-cpu.h> // ggml_threadpool
#include <gguf.h>
#include <llama-cpp.h>
#include <llama.h>
#include <mtmd.h>

#include <memory>

namespace specd::engine {

using model_ptr   = llama_model_ptr;
using context_ptr = llama_context_ptr;
using sampler_ptr = llama_sampler_ptr;

// mtmd's own owning handles (mtmd.h), under the names used here.
using mtmd_ptr        = mtmd::context_ptr;
using mtmd_bitmap_ptr = mtmd::bitmap_ptr;
using mtmd_chunks_ptr = mtmd::input_chunks_ptr;
using mtmd_chunk_ptr  = mtmd::input_chunk_ptr;

// A LoRA adapter must be freed before the model it was loaded for (llama.h); Model keeps its
// adapters in a member declared after the model handle for that reason.
struct adapter_lora_deleter {
    void operator()(llama_adapter_lora * adapter) const { llama_adapter_lora_free(adapter); }
};
using adapter_lora_ptr = std::unique_ptr<llama_adapter_lora, adapter_lora_deleter>;

struct threadpool_deleter {
    void operator()(ggml_threadpool * pool) const { ggml_threadpool_free(pool); }
};
using threadpool_ptr = std::unique_ptr<ggml_threadpool, threadpool_deleter>;

struct gguf_deleter {
    void operator()(gguf_context * ctx) const { gguf_free(ctx); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_deleter>;

// llama_batch is a struct of arrays allocated by llama_batch_init; this owns them.
class Batch {
  public:
    Batch(int32_t n_tokens_max, int32_t n_seq_max) :
        batch_(llama_batch_init(n_tokens_max, 0, n_seq_max)), capacity_(n_tokens_max) {}
    ~Batch() { llama_batch_free(batch_); }
    Batch(const Batch &)             = delete;
    Batch & operator=(const Batch &) = delete;

    void clear() { batch_.n_tokens = 0; }

    // Appends one token; returns its index in the batch (the logits index when `logits`).
    int32_t add(llama_token token, llama_pos pos, llama_seq_id seq, bool logits) {
        const int32_t i    = batch_.n_tokens++;
        batch_.token[i]    = token;
        batch_.pos[i]      = pos;
        batch_.n_seq_id[i] = 1;
        batch_.seq_id[i][0] = seq;
        batch_.logits[i]   = logits;
        return i;
    }

    int32_t size() const { return batch_.n_tokens; }
    int32_t capacity() const { return capacity_; }
    const llama_batch & get() const { return batch_; }

  private:
    llama_batch batch_;
    int32_t     capacity_;
};

} // namespace specd::engine
