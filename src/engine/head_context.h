#pragma once
// The llama context of a head that drafts from the target's hidden state, one for all of a
// session's sequences, created against the target's own context. Two kinds:
//
// - gemma4's assistant has no KV cache of its own: its attention reads the target's last
//   layers' K/V (libllama shares them through llama_context_params::ctx_other), so it is made
//   with the target's sequence count and cache type, and its input row is the target's final
//   hidden state (llama-ext.h's nextn output).
// - EAGLE3 has a one-layer KV cache of its own, in which position P holds the token at P+1
//   read with g_P: its encoder's projection of the target's inputs to three of its layers at
//   P. After every target decode the context keeps the features of all the batch's tokens
//   (after_target_decode); a sequence takes its own, and the decode that reads them first
//   encodes them (one encoder pass for all its pairs and rows), so that a step in which no
//   sequence drafts or feeds the head costs it no encoder pass.
// - DFlash reads the inputs of some of the target's layers like EAGLE3, but its cache holds
//   at P what its encoder makes of the features at P (fed after every target decode, as
//   rows without tokens), and it drafts a whole block in one decode: the token it continues,
//   then a mask token at each position to draft, all seeing each other (in-place denoising).
// - an MTP layer (a model's own nextn layer) keeps a cache of its own like EAGLE3's, in a
//   context of the target's model whose graph is that layer; its input row at P is the
//   target's final hidden state at P, as llama-ext.h's nextn output hands it out.
//
// Creating it also makes the target's context output what the head reads, for every token it
// decodes (not only those with logits: a round's accepted prefix ends anywhere in it).
#include "engine/context_memory.h"
#include "engine/cpu_threads.h"
#include "engine/draft_kind.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace specd::engine {

class HeadContext {
  public:
    // `target_ctx` is the target's context (n_seq sequences of n_ctx tokens, decodes of up to
    // `target_batch` tokens): it must outlive this one. A gemma4 assistant's decode holds one
    // token per sequence (each step reads the hidden state the step before produced), so its
    // batch, and its logits buffer, is n_seq tokens: a 262k vocabulary's logits for the
    // target's whole batch would be hundreds of megabytes. An EAGLE3 head's batch also takes a
    // target decode's pairs, in micro-batches of at most 64 tokens (or n_seq) for the same
    // reason. Throws specd::Error(bad_request) when the head cannot draft for the target
    // (vocabulary, width, layers) or its context cannot be created.
    HeadContext(std::shared_ptr<Model> head, DraftKind kind, const Model & target, llama_context * target_ctx,
                uint32_t n_ctx, int n_seq, int32_t target_batch);

    llama_context *      get() const { return ctx_.get(); }
    const Model &        model() const { return *model_; }
    DraftKind            kind() const { return kind_; }
    const ContextBytes & memory() const { return memory_; }
    // The width of a row the head reads a token with (its own hidden state, as hidden_row
    // hands it out).
    int32_t              n_embd() const { return n_embd_; }
    // The width of a target row (target_row): EAGLE3's are the three layers' features, which
    // a decode encodes to n_embd() first; every other kind's are n_embd() wide.
    int32_t              row_width() const { return kind_ == DraftKind::eagle3 ? feature_width() : n_embd_; }
    // Whether the head keeps a KV cache of its own (EAGLE3, MTP), which the sequences must
    // keep in step with their positions (trim, forget).
    bool                 own_cache() const { return has_own_cache(kind_); }

    // After every decode of the target (`n_tokens` tokens): EAGLE3 and DFlash keep the
    // features of all of them; then target_row(i) is the row batch index i gives the head
    // (row_width() wide), valid until the next target decode.
    void          after_target_decode(int32_t n_tokens);
    const float * target_row(int32_t idx) const;

    // The next decode's batch: each token with the row it is read with (DFlash: a fed row's
    // token is not read, a drafted block's tokens have no row: null); only outputs have
    // logits and a hidden row. `from_target`: the row is a target row (target_row's width),
    // not the head's own hidden state; EAGLE3 encodes those when the batch is decoded.
    void    clear();
    int32_t add(llama_token token, llama_pos pos, llama_seq_id seq, const float * row, bool output = true,
                bool from_target = false);
    int32_t size() const { return n_tokens_; }
    int32_t capacity() const { return capacity_; }
    // Makes every token added so far an output. A batch that mixes pairs with draft tokens
    // needs it: the pinned EAGLE3 and MTP graphs take their hidden rows before selecting the
    // outputs, so with some tokens not outputs a draft token's row index resolves to a pair's.
    void    output_all();

    // A sequence's own cache for the prompt cache (nullopt when it holds nothing or more than
    // `max_bytes`), and back into any sequence; seq_end: one past its last position (0: empty).
    std::optional<std::vector<uint8_t>> save_seq(llama_seq_id seq, size_t max_bytes) const;
    bool                                restore_seq(llama_seq_id seq, const std::vector<uint8_t> & bytes);
    llama_pos                           seq_end(llama_seq_id seq) const;

    // Decodes the batch (EAGLE3: its target rows encoded first, in one encoder pass per
    // micro-batch); false when llama.cpp refused it. decodes() counts the drafting decodes
    // (the feeding decodes of a head with its own cache are not counted), encodes() EAGLE3's
    // encoder passes.
    bool    decode(bool drafting = true);
    // A pair for the head's own cache (no output), read with a target row: when the batch is
    // full, what it holds is decoded first. false when such a decode failed.
    bool    feed_pair(llama_token token, llama_pos pos, llama_seq_id seq, const float * row);
    int64_t decodes() const { return decodes_; }
    int64_t encodes() const { return encodes_; }
    // The head's hidden state after batch index `idx` of the last decode (its input for the
    // token it drafts there); null when llama.cpp has none.
    const float * hidden_row(int32_t idx) const;

    // DFlash: the token at a position to draft, and the most tokens one block drafts.
    llama_token mask_token() const { return mask_; }
    int32_t     block_drafts() const { return block_size_ - 1; }

    // Own cache only (no-ops otherwise). trim: sequence `seq` ends right before `pos`, so that
    // the next token there continues it; a cache that ends further back (an image, a restored
    // prompt the head never read) is cleared instead, as libllama takes a sequence's positions
    // only in order. forget: the sequence holds nothing.
    void trim(llama_seq_id seq, llama_pos pos);
    void forget(llama_seq_id seq);

    // The pools must outlive this context.
    void use_threads(ThreadPools & pools, const ThreadChoice & choice);

  private:
    // The head's context from `cp` (one thread until use_threads()); throws `what` on failure.
    void create(const Model & model, llama_context_params cp, const char * what);
    // The target layers the head reads (its target_layer_ids), checked against the target's
    // count; `final_ok`: the count itself, the target's final hidden state, is one it may read.
    void read_layers(const Model & target, const char * head, bool final_ok);
    void make_eagle3(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch);
    void make_assistant(const Model & target, uint32_t n_ctx, int n_seq);
    void make_mtp(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch);
    void make_dflash(const Model & target, uint32_t n_ctx, int n_seq, int32_t target_batch);
    int32_t feature_width() const { return int32_t(layers_.size()) * n_embd_target_; }
    // EAGLE3: the batch's target rows through the head's encoder, into rows_.
    bool encode_target_rows();

    std::shared_ptr<Model> model_;
    DraftKind              kind_;
    llama_context *        target_ctx_;
    context_ptr            ctx_;
    ContextBytes           memory_;
    int32_t                n_embd_   = 0;
    int32_t                capacity_ = 0;
    int32_t                n_tokens_ = 0;
    int64_t                decodes_  = 0;
    int64_t                encodes_  = 0;
    // The batch's arrays (llama_batch points into them).
    std::vector<llama_token>    tokens_;
    std::vector<float>          rows_;
    std::vector<llama_pos>      pos_;
    std::vector<int32_t>        n_seq_id_;
    std::vector<llama_seq_id>   seq_;
    std::vector<llama_seq_id *> seq_ptr_;
    std::vector<int8_t>         logits_;
    // EAGLE3: the batch indices whose row is a target row, and those rows, in that order.
    std::vector<int32_t>        raw_at_;
    std::vector<float>          raw_rows_;
    // EAGLE3 and DFlash: the target layers it reads (EAGLE3's n_layer: the target's final
    // hidden state), the target's width, and the last target decode's features.
    std::vector<int32_t> layers_;
    int32_t              n_embd_target_ = 0;
    int32_t              n_layer_target_ = 0;
    std::vector<float>   features_;
    int32_t              target_rows_ = 0; // tokens of the last target decode in features_
    // DFlash.
    llama_token          mask_       = -1;
    int32_t              block_size_ = 16;
};

} // namespace specd::engine
