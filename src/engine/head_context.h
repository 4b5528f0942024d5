#pragma once
// The llama context of a head that drafts from the target's hidden state (gemma4's
// assistant), one for all of a session's sequences, created against the target's own
// context: the head has no KV cache of its own, its attention reads the target's last
// layers' K/V (libllama shares them through llama_context_params::ctx_other), so it is made
// with the target's sequence count and cache type. Creating it also makes the target's
// context output its hidden state for every token it decodes (llama-ext.h), which the heads'
// sequences (engine/head_draft) take their input from.
#include "engine/context_memory.h"
#include "engine/cpu_threads.h"
#include "engine/draft_kind.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <memory>
#include <vector>

namespace specd::engine {

class HeadContext {
  public:
    // `target_ctx` is the target's context (n_seq sequences of n_ctx tokens): it must outlive
    // this one. A decode holds one token per sequence (each step reads the hidden state the
    // step before produced), so the head's batch, and its logits buffer, is n_seq tokens: a
    // 262k vocabulary's logits for the target's whole batch would be hundreds of megabytes.
    // Throws specd::Error(bad_request) when the head cannot draft for the target
    // (vocabulary, width) or its context cannot be created.
    HeadContext(std::shared_ptr<Model> head, DraftKind kind, const Model & target, llama_context * target_ctx,
                uint32_t n_ctx, int n_seq);

    llama_context *      get() const { return ctx_.get(); }
    const Model &        model() const { return *model_; }
    DraftKind            kind() const { return kind_; }
    const ContextBytes & memory() const { return memory_; }
    // The width of a hidden-state row: the target's embedding size.
    int32_t              n_embd() const { return n_embd_; }

    // The next decode's batch: each token with the hidden-state row it is read with. Every
    // token is an output (its logits and the head's own next row).
    void    clear();
    int32_t add(llama_token token, llama_pos pos, llama_seq_id seq, const float * row);
    int32_t size() const { return n_tokens_; }
    int32_t capacity() const { return capacity_; }

    // Decodes the batch; false when llama.cpp refused it. decodes() counts the calls.
    bool    decode();
    int64_t decodes() const { return decodes_; }
    // The head's hidden state after batch index `idx` of the last decode (its input for the
    // token it drafts there); null when llama.cpp has none.
    const float * hidden_row(int32_t idx) const;

    // The pools must outlive this context.
    void use_threads(ThreadPools & pools, const ThreadChoice & choice);

  private:
    std::shared_ptr<Model> model_;
    DraftKind              kind_;
    context_ptr            ctx_;
    ContextBytes           memory_;
    int32_t                n_embd_   = 0;
    int32_t                capacity_ = 0;
    int32_t                n_tokens_ = 0;
    int64_t                decodes_  = 0;
    // The batch's arrays (llama_batch points into them).
    std::vector<llama_token>    tokens_;
    std::vector<float>          rows_;
    std::vector<llama_pos>      pos_;
    std::vector<int32_t>        n_seq_id_;
    std::vector<llama_seq_id>   seq_;
    std::vector<llama_seq_id *> seq_ptr_;
    std::vector<int8_t>         logits_;
};

// The target's hidden-state row at batch index `idx` of its last decode (a context a
// HeadContext was made against); null when there is none.
const float * target_hidden_row(llama_context * target_ctx, int32_t idx);

} // namespace specd::engine
