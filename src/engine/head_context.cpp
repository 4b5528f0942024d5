#include "engine/head_context.h"

#include "core/error.h"
#include "engine/context_factory.h"
#include "engine/draft_context.h"

#include <llama-ext.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace specd::engine {

HeadContext::HeadContext(std::shared_ptr<Model> head, DraftKind kind, const Model & target, llama_context * target_ctx,
                         uint32_t n_ctx, int n_seq, int32_t target_batch) :
    model_(std::move(head)), kind_(kind), target_ctx_(target_ctx) {
    if (auto why = vocab_mismatch(target, *model_); !why.empty()) {
        throw bad_request("the draft head cannot be used: " + why);
    }
    switch (kind_) {
        case DraftKind::gemma4_assistant: make_assistant(target, n_ctx, n_seq); break;
        case DraftKind::eagle3: make_eagle3(target, n_ctx, n_seq, target_batch); break;
        case DraftKind::mtp: make_mtp(target, n_ctx, n_seq, target_batch); break;
        case DraftKind::dflash: make_dflash(target, n_ctx, n_seq, target_batch); break;
        default: throw bad_request("a " + std::string(draft_kind_name(kind_)) + " drafter is not supported by specd yet");
    }
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

void HeadContext::create(const Model & model, llama_context_params cp, const char * what) {
    cp.n_threads = cp.n_threads_batch = 1; // until use_threads()
    CreatedContext created = create_context(model, cp, what);
    ctx_    = std::move(created.ctx);
    memory_ = created.bytes;
}

void HeadContext::read_layers(const Model & target, const char * head, bool final_ok) {
    n_embd_target_  = llama_model_n_embd(target.get());
    n_layer_target_ = llama_model_n_layer(target.get());
    const int32_t * ids = llama_model_target_layer_ids(model_->get());
    layers_.assign(ids, ids + llama_model_target_layer_ids_n(model_->get()));
    for (int32_t l : layers_) {
        // libllama aborts the process on a layer the target does not have.
        if (l < 0 || l > n_layer_target_ || (l == n_layer_target_ && !final_ok)) {
            throw bad_request(std::string("the ") + head + " head reads layer " + std::to_string(l) + ", the model has " +
                              std::to_string(n_layer_target_));
        }
    }
}

void HeadContext::make_assistant(const Model & target, uint32_t n_ctx, int n_seq) {
    capacity_ = std::max(1, n_seq);
    n_embd_   = llama_model_n_embd(target.get());
    if (llama_model_n_embd_out(model_->get()) != n_embd_) {
        throw bad_request("the draft head was made for a hidden size of " +
                          std::to_string(llama_model_n_embd_out(model_->get())) + ", the model's is " +
                          std::to_string(n_embd_));
    }
    // The target's sequence count and cache type: the head's attention reads the target's
    // cache tensors and cells as they are.
    llama_context_params cp = sequences_params(target, n_ctx, std::max(1, n_seq), capacity_);
    cp.ctx_type  = LLAMA_CONTEXT_TYPE_MTP;
    cp.ctx_other = target_ctx_;
    create(*model_, cp, "cannot create the draft head's context");
    llama_set_embeddings_nextn(target_ctx_, true, /*masked=*/false);
    llama_set_embeddings_nextn(ctx_.get(), true, /*masked=*/true);
}

void HeadContext::make_eagle3(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch) {
    const llama_model * head = model_->get();
    read_layers(target, "EAGLE3", /*final_ok=*/true);
    if (layers_.size() != 3) throw bad_request("the EAGLE3 head does not name three target layers to read");
    char made_for[32] = {};
    llama_model_meta_val_str(head, "eagle3.target_hidden_size", made_for, sizeof(made_for));
    if (std::to_string(n_embd_target_) != made_for) {
        throw bad_request(std::string("the EAGLE3 head was made for a hidden size of ") + made_for + ", the model's is " +
                          std::to_string(n_embd_target_));
    }
    n_embd_ = llama_model_n_embd(head);
    // A target decode's pairs plus a bridge per sequence (head_draft.h) in one batch; in
    // micro-batches small enough that its logits buffer stays small.
    capacity_               = std::max(1, target_batch) + std::max(1, n_seq);
    llama_context_params cp = sequences_params(*model_, n_ctx, std::max(1, n_seq), capacity_);
    cp.n_ubatch  = uint32_t(draft_ubatch(kind_, n_seq, target_batch));
    cp.ctx_other = target_ctx_; // the target's token embedding and output, when the head has none
    create(*model_, cp, "cannot create the draft head's context");
    for (int32_t l : layers_) {
        if (l < n_layer_target_) llama_set_embeddings_layer_inp(target_ctx_, uint32_t(l), true);
        else llama_set_embeddings_nextn(target_ctx_, true, /*masked=*/false);
    }
    llama_set_embeddings_nextn(ctx_.get(), true, /*masked=*/true);
    features_.resize(size_t(target_batch) * size_t(feature_width()));
}

void HeadContext::make_mtp(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch) {
    if (model_->get() != target.get()) {
        throw bad_request("an MTP layer drafts only for the model that carries it");
    }
    if (llama_model_n_layer_nextn(target.get()) != 1) {
        throw bad_request("the model does not carry exactly one MTP layer (loaded without it?)");
    }
    // The layer's input row is the target's final hidden state, as wide as its output.
    n_embd_   = llama_model_n_embd_out(target.get());
    capacity_ = std::max(1, target_batch) + std::max(1, n_seq);
    // A context of the target's own model whose graph is the nextn layer alone, with a KV
    // cache of that layer (libllama filters it to the nextn layer).
    llama_context_params cp = sequences_params(target, n_ctx, std::max(1, n_seq), capacity_);
    cp.ctx_type  = LLAMA_CONTEXT_TYPE_MTP;
    cp.n_ubatch  = uint32_t(draft_ubatch(kind_, n_seq, target_batch));
    create(target, cp, "cannot create the MTP layer's context");
    llama_set_embeddings_nextn(target_ctx_, true, /*masked=*/false);
    llama_set_embeddings_nextn(ctx_.get(), true, /*masked=*/true);
}

void HeadContext::make_dflash(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch) {
    const llama_model * head = model_->get();
    // Only the layers' inputs are handed out, not the final hidden state.
    read_layers(target, "DFlash", /*final_ok=*/false);
    if (layers_.empty()) throw bad_request("the DFlash head names no target layers to read");
    // Its encoder takes the layers' inputs side by side, each as wide as its own layers.
    if (llama_model_n_embd(head) != n_embd_target_) {
        throw bad_request("the DFlash head was made for a hidden size of " + std::to_string(llama_model_n_embd(head)) +
                          ", the model's is " + std::to_string(n_embd_target_));
    }
    if (llama_model_dflash_selector_top_k(head) > 0) throw bad_request("a DFlash2 head (with a selector) is not supported yet");
    mask_ = llama_vocab_mask(model_->vocab());
    if (mask_ < 0) throw bad_request("the DFlash head's vocabulary names no mask token");
    char meta[32] = {};
    if (llama_model_meta_val_str(head, "dflash.block_size", meta, sizeof(meta)) >= 0) block_size_ = std::atoi(meta);
    if (block_size_ < 2) throw bad_request("the DFlash head's block size is below 2");
    bool causal = false;
    if (llama_model_meta_val_str(head, "dflash.attention.causal", meta, sizeof(meta)) >= 0) causal = std::strcmp(meta, "true") == 0;
    n_embd_ = int32_t(layers_.size()) * n_embd_target_; // a fed row is a token's features
    // libllama decodes a non-causal batch in one micro-batch only: the features a decode
    // feeds, and the blocks it drafts, are at most one micro-batch (which holds a whole block:
    // the target's batch holds a round of every sequence).
    capacity_               = draft_ubatch(kind_, n_seq, target_batch);
    llama_context_params cp = sequences_params(*model_, n_ctx, std::max(1, n_seq), capacity_);
    cp.n_ubatch  = uint32_t(capacity_);
    cp.ctx_other = target_ctx_; // the target's token embedding and output, when the head has none
    create(*model_, cp, "cannot create the draft head's context");
    for (int32_t l : layers_) llama_set_embeddings_layer_inp(target_ctx_, uint32_t(l), true);
    // A block's positions see each other (in-place denoising), unless the head says otherwise.
    llama_set_causal_attn(ctx_.get(), causal);
    features_.resize(size_t(target_batch) * size_t(n_embd_));
}

void HeadContext::after_target_decode(int32_t n_tokens) {
    target_rows_ = 0;
    if ((kind_ != DraftKind::eagle3 && kind_ != DraftKind::dflash) || n_tokens <= 0) return;
    const size_t width = size_t(feature_width());
    if (size_t(n_tokens) * width > features_.size()) return;
    // [n_tokens, 3 x n_embd]: each token's three layer inputs side by side.
    for (size_t k = 0; k < layers_.size(); ++k) {
        const float * layer = layers_[k] < n_layer_target_ ? llama_get_embeddings_layer_inp(target_ctx_, uint32_t(layers_[k]))
                                                           : llama_get_embeddings_nextn(target_ctx_);
        if (!layer) return;
        for (int32_t i = 0; i < n_tokens; ++i) {
            std::memcpy(features_.data() + size_t(i) * width + k * size_t(n_embd_target_),
                        layer + size_t(i) * size_t(n_embd_target_), size_t(n_embd_target_) * sizeof(float));
        }
    }
    // Not encoded here: EAGLE3's encoder runs in the decode that reads them (DFlash's head
    // encodes them itself), so a step whose rows wait, or go unread, costs no encoder pass:
    // one after every target decode was 2% of a 4-sequence step of a 768-wide target on 2
    // cores with every sequence parked at depth 0.
    target_rows_ = n_tokens;
}

const float * HeadContext::target_row(int32_t idx) const {
    if (kind_ != DraftKind::eagle3 && kind_ != DraftKind::dflash) return llama_get_embeddings_nextn_ith(target_ctx_, idx);
    if (idx < 0 || idx >= target_rows_) return nullptr;
    return features_.data() + size_t(idx) * size_t(feature_width());
}

void HeadContext::clear() {
    n_tokens_ = 0;
    raw_at_.clear();
    raw_rows_.clear();
}

void HeadContext::output_all() { std::fill(logits_.begin(), logits_.begin() + n_tokens_, int8_t(1)); }

int32_t HeadContext::add(llama_token token, llama_pos pos, llama_seq_id seq, const float * row, bool output,
                         bool from_target) {
    const int32_t i = n_tokens_++;
    tokens_[size_t(i)] = token;
    pos_[size_t(i)]    = pos;
    seq_[size_t(i)]    = seq;
    logits_[size_t(i)] = output ? 1 : 0;
    if (row && from_target && kind_ == DraftKind::eagle3) {
        raw_at_.push_back(i);
        raw_rows_.insert(raw_rows_.end(), row, row + feature_width());
    } else if (row) {
        std::memcpy(rows_.data() + size_t(i) * size_t(n_embd_), row, size_t(n_embd_) * sizeof(float));
    }
    return i;
}

bool HeadContext::encode_target_rows() {
    const int32_t n      = int32_t(raw_at_.size());
    const int32_t ubatch = int32_t(llama_n_ubatch(ctx_.get()));
    const size_t  width  = size_t(feature_width());
    // The encoder takes one micro-batch at a time; each row is its own token's.
    for (int32_t i = 0; i < n; i += ubatch) {
        llama_batch b{};
        b.n_tokens = std::min(ubatch, n - i);
        b.embd     = raw_rows_.data() + size_t(i) * width;
        ++encodes_;
        if (llama_encode(ctx_.get(), b) != 0) return false;
        const float * g = llama_get_embeddings_nextn(ctx_.get());
        if (!g) return false;
        for (int32_t j = 0; j < b.n_tokens; ++j) {
            std::memcpy(rows_.data() + size_t(raw_at_[size_t(i + j)]) * size_t(n_embd_), g + size_t(j) * size_t(n_embd_),
                        size_t(n_embd_) * sizeof(float));
        }
    }
    return true;
}

bool HeadContext::decode(bool drafting) {
    if (drafting) ++decodes_;
    if (!raw_at_.empty() && !encode_target_rows()) return false;
    llama_batch b{};
    b.n_tokens = n_tokens_;
    // DFlash reads a batch of features (fed) or of tokens (a block to draft), never both.
    const bool dflash = kind_ == DraftKind::dflash;
    b.token    = dflash && !drafting ? nullptr : tokens_.data();
    b.embd     = dflash && drafting ? nullptr : rows_.data();
    b.pos      = pos_.data();
    b.n_seq_id = n_seq_id_.data();
    b.seq_id   = seq_ptr_.data();
    b.logits   = logits_.data();
    return llama_decode(ctx_.get(), b) == 0;
}

bool HeadContext::feed_pair(llama_token token, llama_pos pos, llama_seq_id seq, const float * row) {
    bool ok = true;
    if (n_tokens_ >= capacity_) {
        ok = decode(/*drafting=*/false);
        clear();
    }
    add(token, pos, seq, row, /*output=*/false, /*from_target=*/true);
    return ok;
}

const float * HeadContext::hidden_row(int32_t idx) const { return llama_get_embeddings_nextn_ith(ctx_.get(), idx); }

void HeadContext::trim(llama_seq_id seq, llama_pos pos) {
    if (!own_cache()) return;
    llama_memory_t mem = llama_get_memory(ctx_.get());
    if (llama_memory_seq_pos_max(mem, seq) >= pos) llama_memory_seq_rm(mem, seq, pos, -1);
    const llama_pos last = llama_memory_seq_pos_max(mem, seq);
    if (last >= 0 && last + 1 < pos) llama_memory_seq_rm(mem, seq, -1, -1);
}

std::optional<std::vector<uint8_t>> HeadContext::save_seq(llama_seq_id seq, size_t max_bytes) const {
    if (!own_cache() || seq_end(seq) == 0) return std::nullopt;
    const size_t size = llama_state_seq_get_size(ctx_.get(), seq);
    if (size == 0 || size > max_bytes) return std::nullopt;
    std::vector<uint8_t> bytes(size);
    if (llama_state_seq_get_data(ctx_.get(), bytes.data(), bytes.size(), seq) != size) return std::nullopt;
    return bytes;
}

bool HeadContext::restore_seq(llama_seq_id seq, const std::vector<uint8_t> & bytes) {
    forget(seq);
    if (!own_cache() || bytes.empty()) return false;
    if (llama_state_seq_set_data(ctx_.get(), bytes.data(), bytes.size(), seq) == 0) {
        forget(seq);
        return false;
    }
    return true;
}

llama_pos HeadContext::seq_end(llama_seq_id seq) const {
    if (!own_cache()) return 0;
    return llama_memory_seq_pos_max(llama_get_memory(ctx_.get()), seq) + 1;
}

void HeadContext::forget(llama_seq_id seq) {
    if (own_cache()) llama_memory_seq_rm(llama_get_memory(ctx_.get()), seq, -1, -1);
}

void HeadContext::use_threads(ThreadPools & pools, const ThreadChoice & choice) {
    pools.attach(ctx_.get(), choice.n_threads, choice.n_threads_batch);
}

} // namespace specd::engine
