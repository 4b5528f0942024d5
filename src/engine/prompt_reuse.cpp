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

size_t PromptReuse::prepare(KvSequence & kv, DraftModel * draft, const MultimodalPrompt & prompt) {
    const std::vector<llama_token> & tokens = prompt.tokens;
    size_t common = restore_longer(kv, draft, prompt, image_boundary(prompt, kv.common_prefix(tokens)));
    if (common == tokens.size()) --common; // the last prompt token must be decoded for its logits
    if (!kv.keep(common)) common = 0;     // the memory could not drop the tail: start over
    return common;
}

void PromptReuse::save(const KvSequence & kv, DraftModel * draft, size_t keep) {
    if (!cache_.cache || !cache_.cache->enabled()) return;
    if (kv.size() < keep + k_save_min_lost || cache_.cache->covers(cache_.ns, kv.tokens())) return;
    const size_t budget = cache_.cache->budget_bytes();
    auto         target = kv.save(budget);
    if (!target) return;
    std::optional<cache::SeqState> draft_state;
    if (draft) draft_state = draft->save_state(budget - std::min(budget, target->bytes.size()));
    cache_.cache->store(cache_.ns, std::move(*target), std::move(draft_state));
}

size_t PromptReuse::restore_longer(KvSequence & kv, DraftModel * draft, const MultimodalPrompt & prompt, size_t live) {
    // The last prompt token is always evaluated (its logits start the answer).
    const size_t wanted = prompt.tokens.size() - 1;
    if (!cache_.cache || !cache_.cache->enabled() || live + k_restore_min_gain > wanted) {
        save(kv, draft, live);
        return live;
    }
    const cache::PromptCache::Hit hit = cache_.cache->find(cache_.ns, prompt.tokens);
    const size_t                  n   = image_boundary(prompt, std::min(hit.length, wanted));
    if (!hit.entry || n < live + k_restore_min_gain) {
        cache_.cache->count_miss();
        save(kv, draft, live);
        return live;
    }
    save(kv, draft, 0); // the restore replaces all of it
    if (!kv.restore(hit.entry->target, n)) {
        cache_.cache->count_miss();
        return 0;
    }
    // The draft keeps whatever prefix of its saved sequence the next proposal shares.
    if (draft && hit.entry->draft) draft->restore_state(*hit.entry->draft);
    cache_.cache->count_hit(n);
    return n;
}

} // namespace specd::engine
