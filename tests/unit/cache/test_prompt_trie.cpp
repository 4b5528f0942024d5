#include "cache/prompt_trie.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

using specd::cache::PromptTrie;
using specd::cache::token_id;
using Tokens = std::vector<token_id>;

TEST(PromptTrie, EmptyTrieMatchesNothing) {
    PromptTrie t;
    const auto m = t.longest_match(Tokens{1, 2, 3});
    EXPECT_EQ(m.length, 0u);
    EXPECT_FALSE(m.entry);
    EXPECT_FALSE(t.covering(Tokens{1}));
}

TEST(PromptTrie, LongestMatchStopsWhereThePromptLeavesTheKey) {
    PromptTrie t;
    ASSERT_TRUE(t.insert(Tokens{1, 2, 3, 4, 5}, 7).inserted);
    struct Case {
        Tokens query;
        size_t length;
    };
    for (const Case & c : {Case{{1, 2, 3, 4, 5}, 5}, Case{{1, 2, 3, 4, 5, 6, 7}, 5}, Case{{1, 2, 9}, 2},
                           Case{{1, 2, 3}, 3}, Case{{2, 1}, 0}}) {
        const auto m = t.longest_match(c.query);
        EXPECT_EQ(m.length, c.length);
        EXPECT_EQ(m.entry.has_value(), c.length > 0);
        if (m.entry) EXPECT_EQ(*m.entry, 7u);
    }
}

TEST(PromptTrie, ExtendingAKeySupersedesIt) {
    PromptTrie t;
    ASSERT_TRUE(t.insert(Tokens{1, 2, 3}, 1).inserted);
    const auto ins = t.insert(Tokens{1, 2, 3, 4, 5}, 2);
    ASSERT_TRUE(ins.inserted);
    ASSERT_EQ(ins.superseded, std::vector<specd::cache::entry_id>{1});
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(*t.longest_match(Tokens{1, 2, 3}).entry, 2u);
    // A prefix of a stored key adds nothing: the longer state already serves it.
    const auto again = t.insert(Tokens{1, 2}, 3);
    EXPECT_FALSE(again.inserted);
    EXPECT_EQ(again.covered_by, 2u);
    EXPECT_EQ(t.size(), 1u);
}

TEST(PromptTrie, BranchesShareTheirPrefixAndPickTheShortestBelow) {
    PromptTrie t;
    ASSERT_TRUE(t.insert(Tokens{1, 2, 3, 4, 5, 6}, 1).inserted);
    ASSERT_TRUE(t.insert(Tokens{1, 2, 3, 9}, 2).inserted);
    ASSERT_TRUE(t.insert(Tokens{1, 7}, 3).inserted);
    EXPECT_EQ(t.size(), 3u);
    // Below [1,2,3] the shortest key is [1,2,3,9].
    auto m = t.longest_match(Tokens{1, 2, 3, 8});
    EXPECT_EQ(m.length, 3u);
    EXPECT_EQ(*m.entry, 2u);
    EXPECT_EQ(m.entry_key_length, 4u);
    m = t.longest_match(Tokens{1, 2, 3, 4, 5, 6, 0});
    EXPECT_EQ(m.length, 6u);
    EXPECT_EQ(*m.entry, 1u);
    m = t.longest_match(Tokens{1, 7, 7});
    EXPECT_EQ(m.length, 2u);
    EXPECT_EQ(*m.entry, 3u);
}

TEST(PromptTrie, EraseRemovesOnlyTheExactEntry) {
    PromptTrie t;
    t.insert(Tokens{1, 2, 3, 4}, 1);
    t.insert(Tokens{1, 2, 5}, 2);
    EXPECT_FALSE(t.erase(Tokens{1, 2}, 1));       // not a key
    EXPECT_FALSE(t.erase(Tokens{1, 2, 3, 4}, 2)); // wrong id
    EXPECT_TRUE(t.erase(Tokens{1, 2, 3, 4}, 1));
    EXPECT_EQ(t.size(), 1u);
    auto m = t.longest_match(Tokens{1, 2, 3, 4});
    EXPECT_EQ(m.length, 2u);
    EXPECT_EQ(*m.entry, 2u);
    EXPECT_TRUE(t.erase(Tokens{1, 2, 5}, 2));
    EXPECT_TRUE(t.empty());
    EXPECT_EQ(t.longest_match(Tokens{1, 2}).length, 0u);
}

// Against a brute-force model: a set of keys, none a prefix of another.
TEST(PromptTrie, RandomOperationsAgreeWithABruteForceModel) {
    std::mt19937                        rng(42);
    PromptTrie                          t;
    std::map<Tokens, specd::cache::entry_id> model;
    specd::cache::entry_id              next = 1;
    auto random_tokens = [&] {
        Tokens out(1 + rng() % 8);
        for (auto & x : out) x = static_cast<token_id>(rng() % 3);
        return out;
    };
    auto is_prefix = [](const Tokens & a, const Tokens & b) {
        return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
    };
    for (int step = 0; step < 4000; ++step) {
        const Tokens key = random_tokens();
        if (rng() % 3 == 0 && !model.empty()) {
            auto it = model.begin();
            std::advance(it, rng() % model.size());
            ASSERT_TRUE(t.erase(it->first, it->second));
            model.erase(it);
        } else {
            bool covered = false;
            for (const auto & [k, id] : model) covered = covered || is_prefix(key, k);
            const auto ins = t.insert(key, next);
            ASSERT_EQ(ins.inserted, !covered);
            if (!covered) {
                std::set<specd::cache::entry_id> expect_gone;
                for (auto it = model.begin(); it != model.end();) {
                    if (is_prefix(it->first, key)) {
                        expect_gone.insert(it->second);
                        it = model.erase(it);
                    } else {
                        ++it;
                    }
                }
                ASSERT_EQ(std::set(ins.superseded.begin(), ins.superseded.end()), expect_gone);
                model[key] = next;
            }
            ++next;
        }
        ASSERT_EQ(t.size(), model.size());
        // The match length is the longest common prefix with any key.
        const Tokens q = random_tokens();
        size_t       best = 0;
        for (const auto & [k, id] : model) {
            size_t n = 0;
            while (n < k.size() && n < q.size() && k[n] == q[n]) ++n;
            best = std::max(best, n);
        }
        const auto m = t.longest_match(q);
        ASSERT_EQ(m.length, best);
        if (best > 0) {
            ASSERT_TRUE(m.entry);
            const auto it = std::find_if(model.begin(), model.end(), [&](auto & kv) { return kv.second == *m.entry; });
            ASSERT_NE(it, model.end());
            ASSERT_TRUE(std::equal(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(best), it->first.begin()));
        }
    }
}
