#pragma once
// What follows a target's sequence into the prompt cache and back: a draft model's context or
// a head's own cache. Either is saved beside the target's state and restored with it.
#include "cache/prompt_cache.h"
#include "engine/kv_sequence.h"

#include <cstddef>
#include <optional>

namespace specd::engine {

class CompanionState {
  public:
    virtual ~CompanionState() = default;

    // The sequence's state beside the target's `kv` (what it holds of kv's tokens), at most
    // `max_bytes`; nullopt when there is nothing worth keeping or it does not fit.
    virtual std::optional<cache::SeqState> save_state(const KvSequence & kv, size_t max_bytes) = 0;
    // Takes a saved state back, right after the target's was restored from the same entry.
    virtual void restore_state(const cache::SeqState & state) = 0;
};

} // namespace specd::engine
