#pragma once
// Where a new prompt's prefix comes from before it is evaluated, and where a sequence's
// tokens go before they are overwritten: the sequence's own KV (the longest prefix it shares
// with the prompt), or a saved state in the prompt cache that holds more of the prompt; a
// sequence about to lose more than a little is saved into the cache first.
#include "cache/prompt_cache.h"
#include "engine/companion_state.h"
#include "engine/kv_sequence.h"
#include "engine/projector.h"

#include <string>

namespace specd::engine {

// Where a session keeps sequence states it would otherwise lose, and under which name: the
// namespace must differ for any two model pairs whose states are not interchangeable.
struct PromptCacheLink {
    cache::PromptCache * cache = nullptr; // null: no prompt cache
    std::string          ns;
};

// An image is evaluated whole: a prefix that ends inside one is cut back to its start.
size_t image_boundary(const MultimodalPrompt & prompt, size_t n);

class PromptReuse {
  public:
    explicit PromptReuse(PromptCacheLink cache) : cache_(std::move(cache)) {}

    // Makes `kv` hold the longest usable prefix of `prompt` (its own, or a saved state's;
    // never ending inside an image, never the whole prompt: the last token is evaluated for
    // its logits) and drops the rest. `companion` (a draft model's sequence or a head's own
    // cache), when there is one, is saved and restored with it. Returns how many prompt
    // tokens `kv` holds, and whether they came from a saved state.
    struct Prepared {
        size_t common   = 0;
        bool   restored = false;
    };
    Prepared prepare(KvSequence & kv, CompanionState * companion, const MultimodalPrompt & prompt);

    // Saves `kv` (and its companion's state) into the prompt cache when more than a little of
    // it would be lost: everything after its first `keep` tokens.
    void save(const KvSequence & kv, CompanionState * companion, size_t keep = 0);

  private:
    // With `kv` holding the prompt's first `live` tokens: restores a saved state holding more
    // of it, if there is one (saving the live one first).
    Prepared restore_longer(KvSequence & kv, CompanionState * companion, const MultimodalPrompt & prompt, size_t live);

    PromptCacheLink cache_;
};

} // namespace specd::engine
