#include "engine/head_context.h"

#include "core/error.h"
#include "engine/context_factory.h"
#include "engine/draft_context.h"

#include <llama-ext.h>

#include <algorithm>
#include <cstring>

namespace specd::engine {

HeadContext::HeadContext(std::shared_ptr<Model> head, DraftKind kind, const Model & target, llama_context * target_ctx,
                         uint32_t n_ctx, int n_seq) :
    model_(std::move(head)), kind_(kind), capacity_(std::max(1, n_seq)) {
    if (kind_ != DraftKind::gemma4_assistant) {
        throw bad_request("a " + std::string(draft_kind_name(kind_)) + " drafter is not supported by specd yet");
    }
    if (auto why = vocab_mismatch(target, *model_); !why.empty()) {
        throw bad_request("the draft head cannot be used: " + why);
    }
    n_embd_ = llama_model_n_embd(target.get());
    if (llama_model_n_embd_out(model_->get()) != n_embd_) {
        throw bad_request("the draft head was made for a hidden size of " +
                          std::to_string(llama_model_n_embd_out(model_->get())) + ", the model's is " +
                          std::to_string(n_embd_));
    }
    // The target's sequence count and cache type: the head's attention reads the target's
    // cache tensors and cells as they are.
    llama_context_params cp = sequences_params(target, n_ctx, std::max(1, n_seq), capacity_);
    cp.ctx_type  = LLAMA_CONTEXT_TYPE_MTP;
    cp.ctx_other = target_ctx;
    cp.n_threads = cp.n_threads_batch = 1; // until use_threads()
    CreatedContext created = create_context(*model_, cp, "cannot create the draft head's context");
    ctx_    = std::move(created.ctx);
    memory_ = created.bytes;
    // The target outputs its hidden state for every token of a batch (not only those with
    // logits): a round's accepted prefix ends anywhere in it.
    llama_set_embeddings_nextn(target_ctx, true, /*masked=*/false);
    llama_set_embeddings_nextn(ctx_.get(), true, /*masked=*/true);

    const size_t n = size_t(capacity_);
    tokens_.resize(n);
    rows_.resize(n * size_t(n_embd_));
    pos_.resize(n);
    n_seq_id_.assign(n, 1);
    seq_.resize(n);
    seq_ptr_.resize(n);
    for (size_t i = 0; i < n; ++i) seq_ptr_[i] = &seq_[i];
    logits_.assign(n, 1);
}

void HeadContext::clear() { n_tokens_ = 0; }

int32_t HeadContext::add(llama_token token, llama_pos pos, llama_seq_id seq, const float * row) {
    const int32_t i = n_tokens_++;
    tokens_[size_t(i)] = token;
    pos_[size_t(i)]    = pos;
    seq_[size_t(i)]    = seq;
    std::memcpy(rows_.data() + size_t(i) * size_t(n_embd_), row, size_t(n_embd_) * sizeof(float));
    return i;
}

bool HeadContext::decode() {
    ++decodes_;
    llama_batch b{};
    b.n_tokens = n_tokens_;
    b.token    = tokens_.data();
    b.embd     = rows_.data();
    b.pos      = pos_.data();
    b.n_seq_id = n_seq_id_.data();
    b.seq_id   = seq_ptr_.data();
    b.logits   = logits_.data();
    return llama_decode(ctx_.get(), b) == 0;
}

const float * HeadContext::hidden_row(int32_t idx) const { return llama_get_embeddings_nextn_ith(ctx_.get(), idx); }

void HeadContext::use_threads(ThreadPools & pools, const ThreadChoice & choice) {
    pools.attach(ctx_.get(), choice.n_threads, choice.n_threads_batch);
}

const float * target_hidden_row(llama_context * target_ctx, int32_t idx) {
    return llama_get_embeddings_nextn_ith(target_ctx, idx);
}

} // namespace specd::engine
