#include "cache/prompt_cache.h"

#include <gtest/gtest.h>

using specd::cache::PromptCache;
using specd::cache::SeqState;
using specd::memory::Bucket;
using specd::memory::Ledger;

namespace {

SeqState state(std::vector<int32_t> tokens, size_t bytes) {
    return SeqState{std::move(tokens), std::vector<uint8_t>(bytes, 0xab)};
}

// What an entry of `n_tokens` tokens and `bytes` state bytes costs.
size_t cost(size_t n_tokens, size_t bytes) { return bytes + n_tokens * sizeof(int32_t); }

} // namespace

TEST(PromptCache, DisabledStoresNothing) {
    Ledger      ledger;
    PromptCache cache(0, ledger);
    EXPECT_FALSE(cache.store("m", state({1, 2, 3}, 100), std::nullopt));
    EXPECT_FALSE(cache.find("m", std::vector<int32_t>{1, 2, 3}).entry);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), 0u);
}

TEST(PromptCache, FindsTheLongestSharedPrefixWithinItsNamespace) {
    Ledger      ledger;
    PromptCache cache(1 << 20, ledger);
    ASSERT_TRUE(cache.store("a", state({1, 2, 3, 4}, 100), std::nullopt));
    ASSERT_TRUE(cache.store("a", state({1, 2, 7}, 100), state({1, 2}, 10)));
    const auto hit = cache.find("a", std::vector<int32_t>{1, 2, 3, 9});
    ASSERT_TRUE(hit.entry);
    EXPECT_EQ(hit.length, 3u);
    EXPECT_EQ(hit.entry->target.tokens, (std::vector<int32_t>{1, 2, 3, 4}));
    EXPECT_FALSE(cache.find("b", std::vector<int32_t>{1, 2, 3}).entry); // another model
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), cost(4, 100) + cost(3, 100) + cost(2, 10));
    EXPECT_EQ(cache.stats().entries, 2u);
    EXPECT_EQ(cache.stats().tokens, 7u);
}

TEST(PromptCache, AStateThatExtendsAnotherReplacesIt) {
    Ledger      ledger;
    PromptCache cache(1 << 20, ledger);
    ASSERT_TRUE(cache.store("m", state({1, 2}, 100), std::nullopt));
    ASSERT_TRUE(cache.store("m", state({1, 2, 3}, 150), std::nullopt));
    EXPECT_FALSE(cache.store("m", state({1, 2}, 100), std::nullopt)); // covered
    EXPECT_TRUE(cache.covers("m", std::vector<int32_t>{1, 2, 3}));
    EXPECT_FALSE(cache.covers("m", std::vector<int32_t>{1, 2, 3, 4}));
    const auto s = cache.stats();
    EXPECT_EQ(s.entries, 1u);
    EXPECT_EQ(s.bytes, cost(3, 150));
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), cost(3, 150));
}

TEST(PromptCache, EvictsTheLeastRecentlyUsedWithinTheBudget) {
    Ledger      ledger;
    const size_t one = cost(2, 1000);
    PromptCache cache(3 * one, ledger);
    ASSERT_TRUE(cache.store("m", state({1, 1}, 1000), std::nullopt));
    ASSERT_TRUE(cache.store("m", state({2, 2}, 1000), std::nullopt));
    ASSERT_TRUE(cache.store("m", state({3, 3}, 1000), std::nullopt));
    ASSERT_TRUE(cache.find("m", std::vector<int32_t>{1, 1}).entry); // [1,1] is now the most recent
    ASSERT_TRUE(cache.store("m", state({4, 4}, 1000), std::nullopt));
    EXPECT_TRUE(cache.find("m", std::vector<int32_t>{1, 1}).entry);
    EXPECT_FALSE(cache.find("m", std::vector<int32_t>{2, 2}).entry); // evicted
    const auto s = cache.stats();
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.entries, 3u);
    EXPECT_LE(s.bytes, s.budget_bytes);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), 3 * one);
    // Larger than the whole budget: refused, nothing evicted for it.
    EXPECT_FALSE(cache.store("m", state({5, 5}, 10 * one), std::nullopt));
    EXPECT_EQ(cache.stats().rejected, 1u);
    EXPECT_EQ(cache.stats().entries, 3u);
}

TEST(PromptCache, AnEntryBeingRestoredIsNotEvictedAndKeepsItsBytesUntilLetGo) {
    Ledger      ledger;
    const size_t one = cost(2, 1000);
    PromptCache cache(one, ledger);
    ASSERT_TRUE(cache.store("m", state({1, 1}, 1000), std::nullopt));
    {
        const auto pinned = cache.find("m", std::vector<int32_t>{1, 1});
        ASSERT_TRUE(pinned.entry);
        // No room next to a pinned entry.
        EXPECT_FALSE(cache.store("m", state({2, 2}, 1000), std::nullopt));
        EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), one);
    }
    ASSERT_TRUE(cache.store("m", state({2, 2}, 1000), std::nullopt));
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), one);
    EXPECT_EQ(cache.stats().evictions, 1u);
}

TEST(PromptCache, SupersededWhilePinnedStaysInTheLedgerUntilReleased) {
    Ledger      ledger;
    PromptCache cache(1 << 20, ledger);
    ASSERT_TRUE(cache.store("m", state({1, 2}, 100), std::nullopt));
    auto pinned = cache.find("m", std::vector<int32_t>{1, 2}).entry;
    ASSERT_TRUE(cache.store("m", state({1, 2, 3}, 100), std::nullopt));
    EXPECT_EQ(cache.stats().bytes, cost(3, 100));
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), cost(3, 100) + cost(2, 100));
    pinned.reset();
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), cost(3, 100));
}
