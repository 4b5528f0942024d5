#include "engine/embedder.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/context_factory.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace specd::engine {

namespace {

// Sequences per batch: inputs are packed until either this or n_ctx tokens is reached.
constexpr uint32_t k_seq_max = 16;

// The model's own pooling when its GGUF names one (embedding models), else mean pooling
// (a generative model's hidden states have no pooling of their own).
enum llama_pooling_type model_pooling(const Model & model) {
    const std::string key = model.info().architecture + ".pooling_type";
    char              buf[32];
    if (llama_model_meta_val_str(model.get(), key.c_str(), buf, sizeof(buf)) < 0) return LLAMA_POOLING_TYPE_MEAN;
    const int type = std::atoi(buf);
    // NONE gives per-token vectors and RANK a classifier score: neither is one text embedding.
    if (type == LLAMA_POOLING_TYPE_NONE || type == LLAMA_POOLING_TYPE_RANK) return LLAMA_POOLING_TYPE_MEAN;
    return static_cast<enum llama_pooling_type>(type);
}

} // namespace

Embedder::Embedder(std::shared_ptr<Model> model, uint32_t n_ctx, int32_t n_threads) :
    model_(std::move(model)), n_ctx_(n_ctx), n_threads_(n_threads), batch_(static_cast<int32_t>(n_ctx), 1) {
    ensure_backend();
    pooling_ = model_pooling(*model_);
    n_embd_  = llama_model_n_embd_out(model_->get());

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx           = n_ctx_;
    // A whole input in one micro-batch: pooling (and non-causal attention) needs every
    // token of a sequence in the same ubatch.
    cp.n_batch         = n_ctx_;
    cp.n_ubatch        = n_ctx_;
    cp.n_seq_max       = k_seq_max;
    cp.kv_unified      = true; // the sequences share the n_ctx cells instead of n_ctx / n_seq each
    cp.n_threads       = n_threads_;
    cp.n_threads_batch = n_threads_;
    cp.embeddings      = true;
    cp.pooling_type    = pooling_;
    cp.abort_callback      = abort_when_cancelled;
    cp.abort_callback_data = &cancel_;

    CreatedContext created = create_context(*model_, cp, "cannot create an embedding context of " +
                                                             std::to_string(n_ctx_) + " tokens");
    ctx_    = std::move(created.ctx);
    memory_ = created.bytes;
}

void Embedder::run_batch(const std::atomic<bool> & cancel) {
    llama_memory_t mem = llama_get_memory(ctx_.get());
    if (mem) llama_memory_clear(mem, true); // every batch starts from position 0
    const bool    encoder_only = llama_model_has_encoder(model_->get()) && !llama_model_has_decoder(model_->get());
    const int32_t rc = encoder_only ? llama_encode(ctx_.get(), batch_.get()) : llama_decode(ctx_.get(), batch_.get());
    if (rc == 0) {
        // Every token of an embedding batch is an output, and llama.cpp's output buffer keeps
        // logits and an embedding for each (never shrinking): count it as it grows.
        const size_t n_vocab = static_cast<size_t>(llama_vocab_n_tokens(model_->vocab()));
        const size_t outputs = static_cast<size_t>(batch_.size()) * (n_vocab + size_t(n_embd_)) * sizeof(float);
        output_bytes_        = std::max(output_bytes_, outputs);
        return;
    }
    if (mem) llama_memory_clear(mem, true);
    if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
    throw Error(ErrorKind::internal, "embedding decode failed (" + std::to_string(rc) + ")");
}

std::vector<std::vector<float>> Embedder::embed(const std::vector<std::vector<llama_token>> & inputs,
                                                const std::atomic<bool> & cancel) {
    for (const auto & input : inputs) {
        if (input.empty() || input.size() > n_ctx_) {
            throw Error(ErrorKind::internal, "an embedding input of " + std::to_string(input.size()) +
                                                 " tokens (1.." + std::to_string(n_ctx_) + " expected)");
        }
    }
    cancel_ = &cancel;
    struct ClearCancel {
        Embedder * self;
        ~ClearCancel() { self->cancel_ = nullptr; }
    } clear_cancel{this};

    std::vector<std::vector<float>> out(inputs.size());
    size_t first = 0; // the first input of the batch being filled
    while (first < inputs.size()) {
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        batch_.clear();
        size_t next = first;
        while (next < inputs.size() && next - first < k_seq_max &&
               batch_.size() + inputs[next].size() <= size_t(batch_.capacity())) {
            const auto seq = static_cast<llama_seq_id>(next - first);
            for (size_t i = 0; i < inputs[next].size(); ++i) {
                batch_.add(inputs[next][i], static_cast<llama_pos>(i), seq, true);
            }
            ++next;
        }
        run_batch(cancel);
        for (size_t i = first; i < next; ++i) {
            const float * v = llama_get_embeddings_seq(ctx_.get(), static_cast<llama_seq_id>(i - first));
            if (!v) throw Error(ErrorKind::internal, "llama.cpp returned no pooled embedding");
            out[i].assign(v, v + n_embd_);
        }
        first = next;
    }
    return out;
}

} // namespace specd::engine
