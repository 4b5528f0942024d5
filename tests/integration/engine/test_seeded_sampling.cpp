// A seed gives one text: at temperature > 0 the token at each index is the seeded draw from
// the target's distribution there (spec/seeded_draw), so the answer is the same with drafting
// off, adaptive or at any fixed depth, with the draft model or prompt lookup, alone or in a
// batch, cold or after a prompt-cache hit; different seeds give different texts.
#include "cache/prompt_cache.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace specd;
using namespace specd::engine;

namespace {

ContextOptions ctx(int n_ctx = 512) {
    ContextOptions c;
    c.num_ctx   = n_ctx;
    c.num_batch = 256;
    return c;
}

GenerateOptions sampled(int64_t seed, std::optional<int> fixed_k = std::nullopt, int n = 48) {
    GenerateOptions o;
    o.num_predict          = n;
    o.sampling.temperature = 0.9f;
    o.sampling.seed        = seed;
    o.draft_fixed_k        = fixed_k;
    return o;
}

const std::vector<std::string> k_prompts = {
    "Once upon a time",
    "the cat sat on the mat. the cat sat on the mat. the cat", // prompt lookup has matches
};

struct Models {
    std::shared_ptr<Model> target = fixtures::shared_model("pair-target.gguf");
    std::shared_ptr<Model> draft  = fixtures::shared_model("pair-draft.gguf");
};

} // namespace

TEST(SeededSampling, TheSameSeedGivesTheSameTextAtEveryDepthAndWithEveryDrafter) {
    Models  m;
    Session plain(m.target, ctx());
    Session with_draft(m.target, ctx(), m.draft);
    Session lookup_only(m.target, ctx()); // no draft model: prompt lookup drafts alone
    for (const auto & prompt : k_prompts) {
        const auto tokens = m.target->tokenize(prompt, true, true);
        for (int64_t seed : {7, 1234}) {
            SCOPED_TRACE(prompt + " seed " + std::to_string(seed));
            const auto reference = fixtures::generate(plain, tokens, sampled(seed, 0));
            EXPECT_EQ(reference.result.speculation.drafted, 0);
            int64_t accepted = 0;
            for (std::optional<int> k : std::vector<std::optional<int>>{std::nullopt, 1, 4, 8}) {
                for (Session * s : {&with_draft, &lookup_only}) {
                    const auto out = fixtures::generate(*s, tokens, sampled(seed, k));
                    EXPECT_EQ(out.result.context, reference.result.context)
                        << (s == &with_draft ? "draft model" : "prompt lookup") << " k=" << (k ? *k : -1);
                    EXPECT_EQ(out.text, reference.text);
                    if (s == &with_draft && k) {
                        EXPECT_GT(out.result.speculation.drafted, 0) << "k=" << *k;
                        accepted += out.result.speculation.accepted;
                    }
                }
            }
            // The draft model draws with the same noise: coupled, it agrees often.
            EXPECT_GT(accepted, 0);
        }
    }
}

TEST(SeededSampling, ABatchOfFourAnswersAsEachAlone) {
    Models  m;
    Session solo(m.target, ctx(), m.draft);
    std::vector<std::vector<llama_token>> prompts;
    for (const char * p : {"Once upon a time", "def f(x):", "The weather today", "one two three"}) {
        prompts.push_back(m.target->tokenize(p, true, true));
    }
    std::vector<fixtures::Output> alone;
    for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(fixtures::generate(solo, prompts[i], sampled(40 + int64_t(i))));

    Session                       batch(m.target, ctx(), m.draft, {}, 4);
    std::map<uint64_t, size_t>    index_of;
    std::vector<std::string>      text(prompts.size());
    std::vector<GenerateResult>   result(prompts.size());
    std::atomic<bool>             cancel{false};
    for (size_t i = 0; i < prompts.size(); ++i) {
        const uint64_t id = batch.start({prompts[i], {}, nullptr}, sampled(40 + int64_t(i)),
                                        [&, i](std::string_view t) { text[i] += t; }, {}, cancel);
        index_of[id] = i;
    }
    size_t done = 0;
    while (done < prompts.size()) {
        for (SeqFinished & f : batch.step()) {
            ASSERT_FALSE(f.error);
            result[index_of.at(f.id)] = std::move(f.result);
            ++done;
        }
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
        EXPECT_EQ(result[i].context, alone[i].result.context) << i;
        EXPECT_EQ(text[i], alone[i].text) << i;
    }
}

TEST(SeededSampling, APromptCacheHitGivesTheSameText) {
    Models m;
    std::string prompt_a = "Notes about the garden.", prompt_b = "Notes about the harbour.";
    for (int i = 0; i < 12; ++i) {
        prompt_a += " Item " + std::to_string(i) + " of the garden list is worth keeping.";
        prompt_b += " Item " + std::to_string(i) + " of the harbour list is worth keeping.";
    }
    const auto a = m.target->tokenize(prompt_a, true, true);
    const auto b = m.target->tokenize(prompt_b, true, true);

    Session    fresh(m.target, ctx(1024), m.draft);
    const auto cold = fixtures::generate(fresh, a, sampled(99));

    memory::Ledger     ledger;
    cache::PromptCache cache(64u << 20, ledger);
    Session            s(m.target, ctx(1024), m.draft, {&cache, "pair"});
    fixtures::generate(s, a, sampled(5));          // fills the sequence with a
    fixtures::generate(s, b, sampled(5));          // a is saved before b replaces it
    const auto hit = fixtures::generate(s, a, sampled(99)); // a comes back from the cache
    ASSERT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(hit.result.context, cold.result.context);
    EXPECT_EQ(hit.text, cold.text);
}

TEST(SeededSampling, DifferentSeedsGiveDifferentTexts) {
    Models                     m;
    Session                    s(m.target, ctx(), m.draft);
    const auto                 tokens = m.target->tokenize("Once upon a time", true, true);
    std::set<std::vector<llama_token>> answers;
    for (int64_t seed = 0; seed < 8; ++seed) answers.insert(fixtures::generate(s, tokens, sampled(seed)).result.context);
    EXPECT_EQ(answers.size(), 8u);
}

TEST(SeededSampling, WithoutASeedEachRequestDrawsAFreshOne) {
    Models                     m;
    Session                    s(m.target, ctx(), m.draft);
    const auto                 tokens = m.target->tokenize("Once upon a time", true, true);
    std::set<std::vector<llama_token>> answers;
    for (int i = 0; i < 4; ++i) answers.insert(fixtures::generate(s, tokens, sampled(-1)).result.context);
    EXPECT_EQ(answers.size(), 4u);
}
