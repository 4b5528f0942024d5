#pragma once
// One sequence of a llama context's KV cache together with the tokens it holds. Every change
// to the sequence's cells goes through this type (nothing else calls llama_memory_seq_*), so
// the token mirror and the cache cannot drift apart. Positions are kept beside the tokens,
// never assumed equal to the number of cells: an image's embeddings may advance the position
// by other than their count (M-RoPE models do), so the positions of a prefix are those of its
// cells, and the position after it is the next cell's (or next_pos()).
#include "cache/prompt_cache.h"
#include "engine/llama_handles.h"

#include <optional>
#include <span>
#include <vector>

namespace specd::engine {

class KvSequence {
  public:
    KvSequence(llama_context * ctx, llama_seq_id seq) : ctx_(ctx), seq_(seq) {}

    llama_seq_id                     id() const { return seq_; }
    const std::vector<llama_token> & tokens() const { return tokens_; }
    size_t                           size() const { return tokens_.size(); }
    bool                             empty() const { return tokens_.empty(); }
    // The position the next token takes.
    llama_pos                        next_pos() const { return next_pos_; }
    // How many of `tokens` this sequence already holds, from the start.
    size_t                           common_prefix(std::span<const llama_token> tokens) const;

    // `tokens` were just decoded into this sequence at next_pos(), next_pos() + 1, ...
    void appended(std::span<const llama_token> tokens);
    void appended(llama_token token) { appended(std::span<const llama_token>(&token, 1)); }
    // An image's `cells` were just decoded from next_pos(), advancing it by `n_pos`: one
    // position per cell when there are as many, otherwise (M-RoPE) every cell at next_pos()
    // with its place in the grid held by llama.cpp beside the cell.
    void appended_image(std::span<const llama_token> cells, llama_pos n_pos);

    // Keeps the first `n` tokens and drops every cell after them (rolled-back drafts, a
    // prompt that diverges). False when the memory cannot drop a tail (recurrent memory), or
    // when what stays cannot be continued (window_held): the sequence is then emptied.
    bool keep(size_t n);
    void clear();

    // Context shift: drops tokens [keep, keep + discard) and moves the rest back. Only where
    // llama_memory_can_shift() (never for M-RoPE: libllama aborts on the move).
    void shift(size_t keep, size_t discard);

    // The prompt cache: a copy of the sequence (nullopt when larger than `max_bytes` or not
    // writable), and taking one back with its first `n_tokens` tokens (false: the sequence
    // is empty).
    std::optional<cache::SeqState> save(size_t max_bytes) const;
    bool                           restore(const cache::SeqState & state, size_t n_tokens);

  private:
    llama_memory_t memory() const { return llama_get_memory(ctx_); }
    // A sliding-window model's cache (gemma's, SWA) forgets a sequence's cells once they fall
    // out of the window of its newest position: llama.cpp hands them to the next tokens of any
    // sequence. Dropping a tail after that (an answer's tokens, for a prompt that reuses the
    // prompt before them; or a state saved with them) leaves a prefix whose own window is
    // partly gone, and a decode after it reads attention without those cells: gemma4's
    // fixture answered a reused 277-token prompt with other text from its first token. True
    // when every cell the next position's window needs is still there.
    bool window_held() const;

    llama_context *          ctx_;
    llama_seq_id             seq_;
    std::vector<llama_token> tokens_;    // tokens whose KV is in this sequence, in order
    std::vector<llama_pos>   positions_; // (tokens_): the position each was decoded at
    llama_pos                next_pos_ = 0;
};

} // namespace specd::engine
