// The prompt cache changes how much of a prompt is evaluated, never the answer: greedy output
// is identical whether the prompt's prefix came from a saved state, the live KV or nowhere,
// with speculation on and off.
#include "cache/prompt_cache.h"
#include "engine/backend.h"
#include "engine/context_memory.h"
#include "engine/session.h"
#include "fixtures.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::engine;

namespace {

ContextOptions ctx() {
    ContextOptions c;
    c.num_ctx = 1024;
    return c;
}

using fixtures::greedy;

// A prompt of well over k_save_min_lost tokens, distinct per `topic`.
std::string long_prompt(const std::string & topic) {
    std::string p = "Notes about " + topic + ".";
    for (int i = 0; i < 12; ++i) p += " Item " + std::to_string(i) + " of the " + topic + " list is worth keeping.";
    return p;
}

struct Pair {
    std::shared_ptr<Model> target, draft;
};

Pair models(bool spec) {
    return {fixtures::shared_model("pair-target.gguf"), spec ? fixtures::shared_model("pair-draft.gguf") : nullptr};
}

} // namespace

TEST(PromptCache, RestoredPrefixGivesTheSameAnswerWithAndWithoutSpeculation) {
    for (bool spec : {false, true}) {
        SCOPED_TRACE(spec ? "speculation on" : "speculation off");
        const Pair m = models(spec);
        const auto a = m.target->tokenize(long_prompt("garden"), true, true);
        const auto b = m.target->tokenize(long_prompt("harbour"), true, true);
        auto       a2 = a; // the same conversation, a new question
        const auto more = m.target->tokenize(" And one more question about it?", false, true);
        a2.insert(a2.end(), more.begin(), more.end());

        // Reference: no cache, each prompt in a fresh session.
        std::map<int, fixtures::Output> ref;
        int i = 0;
        for (const std::vector<llama_token> * p : {&a, &b, static_cast<const std::vector<llama_token> *>(&a2)}) {
            Session fresh(m.target, ctx(), m.draft);
            ref[i++] = fixtures::generate(fresh, *p, greedy(24));
        }

        memory::Ledger     ledger;
        cache::PromptCache cache(64u << 20, ledger);
        Session            s(m.target, ctx(), m.draft, {&cache, "pair"});
        const auto out_a = fixtures::generate(s, a, greedy(24));
        EXPECT_EQ(out_a.text, ref[0].text);
        const auto out_b = fixtures::generate(s, b, greedy(24)); // a's state is saved before b replaces it
        EXPECT_EQ(out_b.text, ref[1].text);
        ASSERT_EQ(cache.stats().entries, 1u);
        EXPECT_EQ(ledger.bucket_bytes(memory::Bucket::prompt_cache), cache.stats().bytes);

        const auto out_a2 = fixtures::generate(s, a2, greedy(24)); // restores a, evaluates the question
        EXPECT_EQ(out_a2.text, ref[2].text);
        const auto st = cache.stats();
        EXPECT_EQ(st.hits, 1u);
        EXPECT_GE(st.tokens_reused, a.size() - 1);
        EXPECT_LE(out_a2.result.stats.prompt_eval_count, static_cast<int32_t>(more.size()) + 1);
        EXPECT_EQ(out_a2.result.context, ref[2].result.context);
        if (spec) EXPECT_GT(out_a2.result.speculation.drafted, 0);
    }
}

TEST(PromptCache, AParkedSessionServesTheNextOne) {
    const Pair m = models(true);
    const auto a = m.target->tokenize(long_prompt("orchard"), true, true);
    Session    fresh(m.target, ctx(), m.draft);
    const auto ref = fixtures::generate(fresh, a, greedy(16));

    memory::Ledger     ledger;
    cache::PromptCache cache(64u << 20, ledger);
    {
        Session s(m.target, ctx(), m.draft, {&cache, "pair"});
        fixtures::generate(s, a, greedy(16));
        s.park();
    }
    ASSERT_EQ(cache.stats().entries, 1u);
    // Another namespace (another model pair) never sees it.
    Session other(m.target, ctx(), m.draft, {&cache, "other"});
    EXPECT_EQ(fixtures::generate(other, a, greedy(16)).result.stats.prompt_eval_count, static_cast<int32_t>(a.size()));

    Session    s(m.target, ctx(), m.draft, {&cache, "pair"});
    const auto out = fixtures::generate(s, a, greedy(16));
    EXPECT_EQ(out.text, ref.text);
    EXPECT_EQ(out.result.stats.prompt_eval_count, 1); // only the last prompt token, for its logits
    EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(PromptCache, AStateOverTheBudgetIsNotKeptAndChangesNothing) {
    const Pair m = models(false);
    const auto a = m.target->tokenize(long_prompt("meadow"), true, true);
    const auto b = m.target->tokenize(long_prompt("valley"), true, true);
    memory::Ledger     ledger;
    cache::PromptCache cache(4096, ledger); // far below one state
    Session            s(m.target, ctx(), nullptr, {&cache, "pair"});
    const auto first = fixtures::generate(s, a, greedy(8));
    fixtures::generate(s, b, greedy(8));
    const auto again = fixtures::generate(s, a, greedy(8));
    EXPECT_EQ(again.text, first.text);
    EXPECT_EQ(cache.stats().entries, 0u);
    EXPECT_EQ(cache.stats().hits, 0u);
    EXPECT_EQ(ledger.bucket_bytes(memory::Bucket::prompt_cache), 0u);
}

// The ledger's KV and compute figures come from llama.cpp's own allocation log lines; if a
// new llama.cpp words them differently this fails instead of silently falling back.
TEST(ContextMemory, LlamaCppBufferLinesAreFoundAndMatchTheModelShape) {
    const auto model = fixtures::shared_model("pair-target.gguf");
    ensure_backend();
    LogCapture           capture;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx                = 1024;
    cp.n_batch = cp.n_ubatch = 64;
    context_ptr c(llama_init_from_model(model->get(), cp));
    ASSERT_TRUE(c);
    const ContextBytes parsed = parse_buffer_lines(capture.buffer_lines());
    EXPECT_GT(parsed.compute, 0u);
    EXPECT_EQ(parsed.kv, estimate_kv_bytes(*model, llama_n_ctx(c.get())));
}
