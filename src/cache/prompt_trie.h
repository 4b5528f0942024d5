#pragma once
// A radix trie over token sequences whose entries are the keys of saved sequence states.
//
// Every entry is a leaf. A saved state for tokens T also serves every prefix of T (attention
// is causal: the KV of positions < n does not depend on what came after, so a restored state
// is cut back to the part that matches), so inserting T removes the entries on its path
// (they are prefixes of T, now redundant), and inserting a prefix of an existing key adds
// nothing. Lookup finds how far a prompt runs along the trie and an entry below that point.
//
// Pure data structure: no llama.cpp, no locking, no bytes; the prompt cache owns those.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace specd::cache {

using token_id = int32_t;
using entry_id = uint64_t;

class PromptTrie {
  public:
    PromptTrie();
    ~PromptTrie();
    PromptTrie(const PromptTrie &)             = delete;
    PromptTrie & operator=(const PromptTrie &) = delete;

    struct Match {
        size_t                  length = 0; // tokens of the query the trie holds, from the start
        std::optional<entry_id> entry;      // an entry whose key starts with those tokens
        size_t                  entry_key_length = 0;
    };
    // The longest run of `tokens` along the trie, and the shortest entry below it (the
    // cheapest state to restore that still holds the whole run).
    Match longest_match(std::span<const token_id> tokens) const;

    // An entry whose key starts with `tokens` (or equals it), if any.
    std::optional<entry_id> covering(std::span<const token_id> tokens) const;

    struct Insert {
        bool                  inserted = false;   // false: already covered by `covered_by`
        std::optional<entry_id> covered_by;
        std::vector<entry_id> superseded;         // entries that were prefixes of the key: removed
    };
    Insert insert(std::span<const token_id> key, entry_id id);

    // Removes the entry with exactly this key; false when there is none with this id.
    bool erase(std::span<const token_id> key, entry_id id);

    size_t size() const { return size_; }
    bool   empty() const { return size_ == 0; }

    struct Node; // opaque outside prompt_trie.cpp

  private:
    std::unique_ptr<Node> root_;
    size_t                size_ = 0;
};

} // namespace specd::cache
