// LoRA adapters on the tiny fixture: the create-time check (adapter_check) agrees with what
// llama.cpp loads, and contexts made by create_context compute with the model's adapters.
#include "core/error.h"
#include "engine/adapter_check.h"
#include "engine/context_factory.h"
#include "fixtures.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::engine;
using specd::fixtures::fixture;

namespace {

// Greedy continuation of `prompt` for n tokens, decoded one by one in a fresh context.
std::vector<llama_token> greedy(const Model & model, const std::string & prompt, int n) {
    llama_context_params params = llama_context_default_params();
    params.n_ctx   = 256;
    params.n_batch = 256;
    CreatedContext c = create_context(model, params, "test context");
    std::vector<llama_token> tokens = model.tokenize(prompt, true, false);
    std::vector<llama_token> out;
    Batch batch(256, 1);
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], llama_pos(i), 0, i + 1 == tokens.size());
    llama_pos pos = llama_pos(tokens.size());
    for (int step = 0; step < n; ++step) {
        EXPECT_EQ(llama_decode(c.ctx.get(), batch.get()), 0);
        const float * logits  = llama_get_logits_ith(c.ctx.get(), -1);
        const int32_t n_vocab = llama_vocab_n_tokens(model.vocab());
        const llama_token next = llama_token(std::max_element(logits, logits + n_vocab) - logits);
        out.push_back(next);
        batch.clear();
        batch.add(next, pos++, 0, true);
    }
    return out;
}

ModelLoadOptions with_adapter(const std::string & name) {
    ModelLoadOptions opts;
    opts.adapters = {fixture(name)};
    return opts;
}

} // namespace

TEST(Adapters, TheFixtureFitsTheTinyModelAndNotOthers) {
    EXPECT_EQ(lora_adapter_mismatch(fixture("tiny.gguf"), fixture("tiny-lora.gguf")), "");
    const std::string small = lora_adapter_mismatch(fixture("tiny.gguf"), fixture("small-lora.gguf"));
    EXPECT_NE(small.find("shapes of 'blk.0."), std::string::npos) << small;
    const std::string not_adapter = lora_adapter_mismatch(fixture("tiny.gguf"), fixture("tiny-spm.gguf"));
    EXPECT_NE(not_adapter.find("not an adapter"), std::string::npos) << not_adapter;
    // The vision text model has the same shapes as tiny (n_embd 64, 2 layers): it fits.
    EXPECT_EQ(lora_adapter_mismatch(fixture("vision-text.gguf"), fixture("tiny-lora.gguf")), "");
}

TEST(Adapters, LlamaCppRefusesWhatTheCheckRefuses) {
    try {
        Model::load(fixture("tiny.gguf"), with_adapter("small-lora.gguf"));
        FAIL() << "a mismatched adapter loaded";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        const std::string msg = e.what();
        EXPECT_NE(msg.find("failed to load LoRA adapter small-lora.gguf"), std::string::npos) << msg;
        EXPECT_EQ(msg.find('/'), std::string::npos) << "no paths in: " << msg;
    }
}

TEST(Adapters, EveryContextOfTheModelComputesWithItsAdapter) {
    const auto plain   = fixtures::shared_model("tiny.gguf");
    const auto adapted = Model::load(fixture("tiny.gguf"), with_adapter("tiny-lora.gguf"));
    ASSERT_EQ(adapted->adapters().size(), 1u);
    EXPECT_TRUE(plain->adapters().empty());

    const std::string prompt = "Once upon a time, in a land far away,";
    const auto base = greedy(*plain, prompt, 8);
    const auto with = greedy(*adapted, prompt, 8);
    EXPECT_NE(base, with) << "the adapter changed no greedy choice";
    // Deterministic: a second context of the adapted model, and a second load of it, agree.
    EXPECT_EQ(greedy(*adapted, prompt, 8), with);
    const auto again = Model::load(fixture("tiny.gguf"), with_adapter("tiny-lora.gguf"));
    EXPECT_EQ(greedy(*again, prompt, 8), with);
    // And the plain model is untouched by an adapted one living beside it.
    EXPECT_EQ(greedy(*plain, prompt, 8), base);
}
