#include "cache/prompt_cache.h"

#include <algorithm>
#include <unistd.h>

namespace specd::cache {

size_t CacheEntry::bytes() const {
    const auto size_of = [](const SeqState & s) {
        return s.bytes.size() + s.tokens.size() * sizeof(token_id) + s.positions.size() * sizeof(int32_t);
    };
    size_t n = size_of(target);
    if (companion) n += size_of(*companion);
    return n;
}

size_t default_prompt_cache_budget() {
    constexpr size_t cap   = 8ull << 30;
    const long       pages = sysconf(_SC_PHYS_PAGES);
    const long       page  = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return cap;
    return std::min(cap, static_cast<size_t>(pages) * static_cast<size_t>(page) / 4);
}

PromptCache::PromptCache(size_t budget_bytes, memory::Ledger & ledger) :
    budget_(budget_bytes), owner_(ledger.open_owner(memory::OwnerKind::cache, "prompt cache")) {
    counts_.budget_bytes = budget_;
}

PromptCache::Hit PromptCache::find(const std::string & ns, std::span<const token_id> tokens) {
    Hit hit;
    if (!enabled()) return hit;
    std::lock_guard lock(mu_);
    auto t = tries_.find(ns);
    if (t == tries_.end()) return hit;
    const PromptTrie::Match m = t->second.longest_match(tokens);
    if (!m.entry) return hit;
    auto & e     = entries_.at(*m.entry);
    e->last_used = ++clock_;
    hit.entry    = e;
    hit.length   = m.length;
    return hit;
}

bool PromptCache::covers(const std::string & ns, std::span<const token_id> tokens) const {
    std::lock_guard lock(mu_);
    auto t = tries_.find(ns);
    return t != tries_.end() && t->second.covering(tokens).has_value();
}

void PromptCache::remove_locked(const std::shared_ptr<CacheEntry> & e) {
    auto t = tries_.find(e->ns);
    if (t != tries_.end()) {
        t->second.erase(e->target.tokens, e->id);
        if (t->second.empty()) tries_.erase(t);
    }
    bytes_  -= e->bytes();
    tokens_ -= e->target.tokens.size();
    entries_.erase(e->id); // the bytes go when the last holder lets go (a restoring request)
}

void PromptCache::set_budget(size_t budget_bytes) {
    if (!enabled() || budget_bytes == 0) return;
    std::lock_guard lock(mu_);
    budget_              = budget_bytes;
    counts_.budget_bytes = budget_bytes;
    make_room_locked(0);
}

bool PromptCache::make_room_locked(size_t bytes) {
    while (bytes_ + bytes > budget_) {
        // The least recently used entry no request is holding. A linear scan: entries are
        // whole sequence states (kilobytes to gigabytes), so there are few of them.
        std::shared_ptr<CacheEntry> victim;
        for (const auto & [id, e] : entries_) {
            if (e.use_count() > 1) continue;
            if (!victim || e->last_used < victim->last_used) victim = e;
        }
        if (!victim) return false;
        remove_locked(victim);
        counts_.evictions++;
    }
    return true;
}

bool PromptCache::store(const std::string & ns, SeqState target, std::optional<SeqState> companion) {
    if (!enabled() || target.tokens.empty()) return false;
    auto e       = std::make_shared<CacheEntry>();
    e->ns        = ns;
    e->target    = std::move(target);
    e->companion = std::move(companion);
    const size_t bytes = e->bytes();

    std::lock_guard lock(mu_);
    auto & trie = tries_[ns];
    if (auto c = trie.covering(e->target.tokens)) {
        entries_.at(*c)->last_used = ++clock_;
        return false;
    }
    if (bytes > budget_ || !make_room_locked(bytes)) {
        counts_.rejected++;
        if (trie.empty()) tries_.erase(ns);
        return false;
    }
    e->id          = next_id_++;
    e->last_used   = ++clock_;
    e->reservation = owner_.reserve(memory::Bucket::prompt_cache, bytes);
    // make_room_locked may have emptied and dropped this namespace's trie.
    const PromptTrie::Insert ins = tries_[ns].insert(e->target.tokens, e->id);
    for (entry_id old : ins.superseded) {
        // The trie already dropped it (its erase finds nothing); the rest of the removal is the same.
        if (auto it = entries_.find(old); it != entries_.end()) remove_locked(std::shared_ptr<CacheEntry>(it->second));
    }
    bytes_  += bytes;
    tokens_ += e->target.tokens.size();
    entries_.emplace(e->id, std::move(e));
    counts_.stores++;
    return true;
}

void PromptCache::count_hit(size_t tokens_reused) {
    std::lock_guard lock(mu_);
    counts_.hits++;
    counts_.tokens_reused += tokens_reused;
}

void PromptCache::count_miss() {
    std::lock_guard lock(mu_);
    counts_.misses++;
}

memory::PromptCacheStats PromptCache::stats() const {
    std::lock_guard lock(mu_);
    memory::PromptCacheStats s = counts_;
    s.bytes   = bytes_;
    s.entries = entries_.size();
    s.tokens  = tokens_;
    return s;
}

} // namespace specd::cache
