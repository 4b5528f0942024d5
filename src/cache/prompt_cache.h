#pragma once
// The prompt cache: saved sequence states (the target's KV, and its draft model's or head's)
// in host memory, found by token prefix, within a byte budget.
//
// A state is saved when the live KV of a context is about to be overwritten by a prompt that
// does not continue it, or when its context closes; a later prompt that shares a prefix with
// a saved state restores it and evaluates only the rest. States live in one trie per
// namespace (a model and its draft: a state only restores into the same models); the budget
// and the LRU order are shared by all of them. Entries a request is restoring (held through
// a shared_ptr) are never evicted; their bytes stay in the ledger until they are let go.
//
// Thread-safe: every runner thread shares the process's cache.
#include "cache/prompt_trie.h"
#include "memory/ledger.h"
#include "memory/prompt_cache_stats.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace specd::cache {

// One context's sequence: the tokens whose KV it holds (positions 0..n-1) and the bytes of
// llama_state_seq_get_data for it.
struct SeqState {
    std::vector<token_id> tokens;
    std::vector<uint8_t>  bytes;
    std::vector<int32_t>  positions; // (tokens): the position each token's KV was decoded at
    int32_t               next_pos = 0; // the position after them (past an M-RoPE image: more than the last + 1)
};

struct CacheEntry {
    std::string             ns;
    SeqState                target;
    std::optional<SeqState> companion; // the draft model's context or the head's own cache, when saved
    memory::Reservation     reservation;
    uint64_t                last_used = 0; // the cache's clock; guarded by the cache's mutex
    entry_id                id        = 0;

    size_t bytes() const;
};


class PromptCache {
  public:
    // budget_bytes 0: disabled (every lookup misses, nothing is stored).
    PromptCache(size_t budget_bytes, memory::Ledger & ledger);

    bool   enabled() const { return budget_ > 0; }
    size_t budget_bytes() const { return budget_; }
    // A new budget for an enabled cache (never 0: a cache is enabled or not from its start):
    // the least recently used entries no request holds go until it fits. A runner process's
    // cache gets its share of the server's budget this way when models load or unload.
    void   set_budget(size_t budget_bytes);

    struct Hit {
        std::shared_ptr<const CacheEntry> entry; // null: nothing shares a prefix
        size_t                            length = 0; // leading tokens of the query it holds
    };
    // The saved state sharing the longest prefix with `tokens`. Marks it recently used.
    Hit find(const std::string & ns, std::span<const token_id> tokens);

    // Whether a saved state already holds `tokens` (as its key or a prefix of it).
    bool covers(const std::string & ns, std::span<const token_id> tokens) const;

    // Saves a state, evicting the least recently used unpinned entries to make room. False
    // when it cannot fit (disabled, larger than the budget, or the rest is pinned) or is
    // already covered.
    bool store(const std::string & ns, SeqState target, std::optional<SeqState> companion);

    // Counted by the caller, which knows whether a restore actually happened.
    void count_hit(size_t tokens_reused);
    void count_miss();

    memory::PromptCacheStats stats() const;

  private:
    void remove_locked(const std::shared_ptr<CacheEntry> & e);
    bool make_room_locked(size_t bytes);

    std::atomic<size_t>                                   budget_;
    memory::OwnerHandle                                   owner_;
    mutable std::mutex                                    mu_;
    std::map<std::string, PromptTrie>                     tries_;   // by namespace
    std::unordered_map<entry_id, std::shared_ptr<CacheEntry>> entries_;
    size_t                                                bytes_    = 0;
    size_t                                                tokens_   = 0;
    uint64_t                                              clock_    = 0;
    entry_id                                              next_id_  = 1;
    memory::PromptCacheStats                                      counts_;  // the counters only
};

// The default budget: min(8 GiB, a quarter of physical memory).
size_t default_prompt_cache_budget();

} // namespace specd::cache
