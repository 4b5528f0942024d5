#include "engine/seq_state.h"

namespace specd::engine {

std::optional<cache::SeqState> save_seq_state(llama_context * ctx, llama_seq_id seq,
                                              const std::vector<llama_token> & tokens, size_t max_bytes) {
    if (tokens.empty()) return std::nullopt;
    const size_t size = llama_state_seq_get_size(ctx, seq);
    if (size == 0 || size > max_bytes) return std::nullopt;
    cache::SeqState s;
    s.tokens.assign(tokens.begin(), tokens.end());
    s.bytes.resize(size);
    if (llama_state_seq_get_data(ctx, s.bytes.data(), s.bytes.size(), seq) != size) return std::nullopt;
    return s;
}

bool restore_seq_state(llama_context * ctx, llama_seq_id seq, const cache::SeqState & state, size_t n_tokens) {
    llama_memory_t mem = llama_get_memory(ctx);
    llama_memory_seq_rm(mem, seq, -1, -1);
    // A state saved from any sequence restores into any other: llama.cpp writes the cells
    // with their positions and relabels them to the destination sequence.
    bool ok = llama_state_seq_set_data(ctx, state.bytes.data(), state.bytes.size(), seq) != 0;
    // Causal attention: the KV of the first n_tokens does not depend on the rest.
    if (ok && n_tokens < state.tokens.size()) {
        ok = llama_memory_seq_rm(mem, seq, static_cast<llama_pos>(n_tokens), -1);
    }
    if (!ok) llama_memory_seq_rm(mem, seq, -1, -1);
    return ok;
}

} // namespace specd::engine
