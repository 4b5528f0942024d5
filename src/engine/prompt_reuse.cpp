#include "engine/prompt_reuse.h"

#include <algorithm>

namespace specd::engine {

namespace {

// A live sequence is saved when at least this many of its tokens are about to be lost: a chat
// that goes on re-tokenizes the end of the last answer a little differently, and copying the
// whole state for those few tokens would be waste.
constexpr size_t k_save_min_lost = 32;
// A saved state is restored when it holds at least this many more prompt tokens than the
// live KV: below that, evaluating them costs about as much as the copy.
constexpr size_t k_restore_min_gain = 16;

} // namespace

size_t image_boundary(const MultimodalPrompt & prompt, size_t n) {
    for (const ImageSpan & span : prompt.images) {
        if (span.start < n && n < span.start + span.n_tokens) return span.start;
    }
    return n;
}

PromptReuse::Prepared PromptReuse::prepare(KvSequence & kv, CompanionState * companion, const MultimodalPrompt & prompt) {
    const std::vector<llama_token> & tokens = prompt.tokens;
    Prepared out = restore_longer(kv, companion, prompt, image_boundary(prompt, kv.common_prefix(tokens)));
    if (out.common == tokens.size()) --out.common; // the last prompt token must be decoded for its logits
    if (!kv.keep(out.common)) out.common = 0;      // the memory could not drop the tail: start over
    return out;
}

void PromptReuse::save(const KvSequence & kv, CompanionState * companion, size_t keep) {
    if (!cache_.cache || !cache_.cache->enabled()) return;
    if (kv.size() < keep + k_save_min_lost || cache_.cache->covers(cache_.ns, kv.tokens())) return;
    const size_t budget = cache_.cache->budget_bytes();
    auto         target = kv.save(budget);
    if (!target) return;
    std::optional<cache::SeqState> companion_state;
    if (companion) companion_state = companion->save_state(kv, budget - std::min(budget, target->bytes.size()));
    cache_.cache->store(cache_.ns, std::move(*target), std::move(companion_state));
}

PromptReuse::Prepared PromptReuse::restore_longer(KvSequence & kv, CompanionState * companion,
                                                  const MultimodalPrompt & prompt, size_t live) {
    // The last prompt token is always evaluated (its logits start the answer).
    const size_t wanted = prompt.tokens.size() - 1;
    if (!cache_.cache || !cache_.cache->enabled() || live + k_restore_min_gain > wanted) {
        save(kv, companion, live);
        return {live, false};
    }
    const cache::PromptCache::Hit hit = cache_.cache->find(cache_.ns, prompt.tokens);
    const size_t                  n   = image_boundary(prompt, std::min(hit.length, wanted));
    if (!hit.entry || n < live + k_restore_min_gain) {
        cache_.cache->count_miss();
        save(kv, companion, live);
        return {live, false};
    }
    save(kv, companion, 0); // the restore replaces all of it
    if (!kv.restore(hit.entry->target, n)) {
        cache_.cache->count_miss();
        return {0, false};
    }
    // A draft model keeps whatever prefix of its saved sequence the next proposal shares; a
    // head keeps what its saved cache holds of the restored prefix (HeadDraft::begin_prompt).
    if (companion && hit.entry->companion) companion->restore_state(*hit.entry->companion);
    cache_.cache->count_hit(n);
    return {n, true};
}

} // namespace specd::engine
