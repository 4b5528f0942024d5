#include "engine/seq_state.h"

namespace specd::engine {

std::optional<cache::SeqState> save_seq_state(llama_context * ctx, const std::vector<llama_token> & tokens,
                                              size_t max_bytes) {
    if (tokens.empty()) return std::nullopt;
    const size_t size = llama_state_seq_get_size(ctx, 0);
    if (size == 0 || size > max_bytes) return std::nullopt;
    cache::SeqState s;
    s.tokens.assign(tokens.begin(), tokens.end());
    s.bytes.resize(size);
    if (llama_state_seq_get_data(ctx, s.bytes.data(), s.bytes.size(), 0) != size) return std::nullopt;
    return s;
}

bool restore_seq_state(llama_context * ctx, const cache::SeqState & state, size_t n_tokens) {
    llama_memory_t mem = llama_get_memory(ctx);
    llama_memory_clear(mem, true);
    bool ok = llama_state_seq_set_data(ctx, state.bytes.data(), state.bytes.size(), 0) != 0;
    // Causal attention: the KV of the first n_tokens does not depend on the rest.
    if (ok && n_tokens < state.tokens.size()) {
        ok = llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(n_tokens), -1);
    }
    if (!ok) llama_memory_clear(mem, true);
    return ok;
}

} // namespace specd::engine
