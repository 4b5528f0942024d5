#pragma once
// Copies of one of a context's sequences (its KV cells and their positions) to and from host
// memory, for the prompt cache.
#include "cache/prompt_cache.h"
#include "engine/llama_handles.h"

#include <optional>
#include <vector>

namespace specd::engine {

// The state of sequence `seq` holding `tokens`; nullopt when llama.cpp cannot write it or it
// is larger than `max_bytes` (measured first, so an oversized state is never copied).
std::optional<cache::SeqState> save_seq_state(llama_context * ctx, llama_seq_id seq,
                                              const std::vector<llama_token> & tokens, size_t max_bytes);

// Replaces sequence `seq` with `state`, keeping its first `n_tokens` tokens; the context's
// other sequences are left alone. False (and `seq` empty) when the state does not fit this
// context or cannot be cut there.
bool restore_seq_state(llama_context * ctx, llama_seq_id seq, const cache::SeqState & state, size_t n_tokens);

} // namespace specd::engine
