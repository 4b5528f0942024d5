#include "engine/kv_sequence.h"

#include <algorithm>

namespace specd::engine {

size_t KvSequence::common_prefix(std::span<const llama_token> tokens) const {
    const size_t n = std::min(tokens.size(), tokens_.size());
    return static_cast<size_t>(std::mismatch(tokens_.begin(), tokens_.begin() + static_cast<std::ptrdiff_t>(n),
                                              tokens.begin()).first -
                               tokens_.begin());
}

void KvSequence::appended(std::span<const llama_token> tokens) {
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    for (size_t i = 0; i < tokens.size(); ++i) positions_.push_back(next_pos_++);
}

void KvSequence::appended_image(std::span<const llama_token> cells, llama_pos n_pos) {
    const bool shared = size_t(n_pos) != cells.size();
    tokens_.insert(tokens_.end(), cells.begin(), cells.end());
    for (size_t i = 0; i < cells.size(); ++i) positions_.push_back(shared ? next_pos_ : next_pos_ + llama_pos(i));
    next_pos_ += n_pos;
}

bool KvSequence::keep(size_t n) {
    n                    = std::min(n, tokens_.size());
    const bool     tail  = n < tokens_.size();
    const llama_pos from = tail ? positions_[n] : next_pos_;
    // Cells past the mirror (a round's rejected drafts) go too: everything from `from` on.
    if (!llama_memory_seq_rm(memory(), seq_, from, -1)) {
        clear();
        return false;
    }
    tokens_.resize(n);
    positions_.resize(n);
    next_pos_ = from;
    if (tail && !window_held()) {
        clear();
        return false;
    }
    return true;
}

bool KvSequence::window_held() const {
    const int32_t n_swa = llama_model_n_swa(llama_get_model(ctx_));
    if (n_swa <= 0 || tokens_.empty()) return true;
    // The next token at next_pos_ attends to the cells from next_pos_ - n_swa + 1 on (a
    // chunked window starts no earlier), and the cache holds a sequence's cells from its
    // lowest position on without a gap.
    const llama_pos lowest = llama_memory_seq_pos_min(memory(), seq_);
    return lowest >= 0 && lowest <= std::max<llama_pos>(0, next_pos_ - n_swa + 1);
}

void KvSequence::clear() {
    llama_memory_seq_rm(memory(), seq_, -1, -1);
    tokens_.clear();
    positions_.clear();
    next_pos_ = 0;
}

void KvSequence::shift(size_t keep, size_t discard) {
    keep    = std::min(keep, tokens_.size());
    discard = std::min(discard, tokens_.size() - keep);
    if (discard == 0) return;
    const llama_pos p0 = positions_[keep];
    const llama_pos p1 = keep + discard < positions_.size() ? positions_[keep + discard] : next_pos_;
    const llama_pos delta = p1 - p0;
    llama_memory_seq_rm(memory(), seq_, p0, p1);
    llama_memory_seq_add(memory(), seq_, p1, next_pos_, -delta);
    const auto k = static_cast<std::ptrdiff_t>(keep), d = static_cast<std::ptrdiff_t>(discard);
    tokens_.erase(tokens_.begin() + k, tokens_.begin() + k + d);
    positions_.erase(positions_.begin() + k, positions_.begin() + k + d);
    for (size_t i = keep; i < positions_.size(); ++i) positions_[i] -= delta;
    next_pos_ -= delta;
}

std::optional<cache::SeqState> KvSequence::save(size_t max_bytes) const {
    if (tokens_.empty()) return std::nullopt;
    const size_t size = llama_state_seq_get_size(ctx_, seq_);
    if (size == 0 || size > max_bytes) return std::nullopt;
    cache::SeqState s;
    s.tokens    = tokens_;
    s.positions = positions_;
    s.next_pos  = next_pos_;
    s.bytes.resize(size);
    if (llama_state_seq_get_data(ctx_, s.bytes.data(), s.bytes.size(), seq_) != size) return std::nullopt;
    return s;
}

bool KvSequence::restore(const cache::SeqState & state, size_t n_tokens) {
    clear();
    n_tokens = std::min(n_tokens, state.tokens.size());
    // A state saved from any sequence restores into any other: llama.cpp writes the cells
    // with their positions and relabels them to this sequence.
    if (llama_state_seq_set_data(ctx_, state.bytes.data(), state.bytes.size(), seq_) == 0) {
        clear();
        return false;
    }
    tokens_.assign(state.tokens.begin(), state.tokens.end());
    if (state.positions.size() == state.tokens.size()) {
        positions_.assign(state.positions.begin(), state.positions.end());
    } else {
        positions_.resize(tokens_.size());
        for (size_t i = 0; i < positions_.size(); ++i) positions_[i] = static_cast<llama_pos>(i);
    }
    // A state that ends with an M-RoPE image continues past its last cell's position.
    next_pos_ = positions_.empty() ? 0 : std::max(positions_.back() + 1, state.next_pos);
    // Causal attention: the KV of the first n_tokens does not depend on the rest.
    return keep(n_tokens) || n_tokens == 0;
}

} // namespace specd::engine
