// The fixture models from tests/make-fixtures.sh, checked through libllama the way the engine
// will use them: real tokenizer, chat template presence, non-degenerate greedy output, and
// draft/target pairs whose agreement matches what the generator promised.

#include <gtest/gtest.h>

#include "engine/llama_handles.h"

#include <llama-cpp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace {

std::string fixture_path(const char * name) {
    const char * dir = std::getenv("SPECD_FIXTURES");
    return dir ? (std::filesystem::path(dir) / name).string() : std::string();
}

llama_model_ptr load(const char * name) {
    llama_model_params params = llama_model_default_params();
    params.n_gpu_layers = 0;
    llama_model_ptr model(llama_model_load_from_file(fixture_path(name).c_str(), params));
    EXPECT_TRUE(model) << "cannot load " << fixture_path(name);
    return model;
}

llama_context_ptr context(llama_model * model, uint32_t n_ctx) {
    llama_context_params params = llama_context_default_params();
    params.n_ctx = params.n_batch = params.n_ubatch = n_ctx;
    params.n_threads = params.n_threads_batch = 2;
    params.no_perf = true;
    return llama_context_ptr(llama_init_from_model(model, params));
}

std::vector<llama_token> tokenize(const llama_vocab * vocab, const std::string & text, bool add_special) {
    std::vector<llama_token> tokens(text.size() + 8);
    const int32_t n = llama_tokenize(vocab, text.data(), int32_t(text.size()), tokens.data(),
                                     int32_t(tokens.size()), add_special, /*parse_special =*/false);
    EXPECT_GE(n, 0);
    tokens.resize(size_t(std::max(n, 0)));
    return tokens;
}

llama_token argmax(const float * logits, int32_t n_vocab) {
    return llama_token(std::max_element(logits, logits + n_vocab) - logits);
}

// Greedy choice after every position of `tokens`, all in one teacher-forced batch.
std::vector<llama_token> greedy_choices(llama_model * model, const std::vector<llama_token> & tokens) {
    llama_context_ptr ctx = context(model, uint32_t(tokens.size()));
    specd::engine::Batch batch(int32_t(tokens.size()), 1);
    for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], llama_pos(i), 0, true);
    if (!ctx || llama_decode(ctx.get(), batch.get()) != 0) {
        ADD_FAILURE() << "decode failed";
        return {};
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    std::vector<llama_token> choices;
    for (size_t i = 0; i < tokens.size(); ++i) {
        choices.push_back(argmax(llama_get_logits_ith(ctx.get(), int32_t(i)), n_vocab));
    }
    return choices;
}

// Teacher-forced greedy agreement of a fixture pair on real text rather than on the
// generator's own random probe, so this checks that the calibration carries over to inputs.
double pair_agreement(const char * draft_name, const char * target_name) {
    llama_model_ptr draft = load(draft_name);
    llama_model_ptr target = load(target_name);
    if (!draft || !target) {
        return -1.0;
    }
    const llama_vocab * vocab = llama_model_get_vocab(target.get());
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(draft.get())), llama_vocab_n_tokens(vocab));

    std::string text;
    while (text.size() < 1500) {
        text += "The quick brown fox jumps over the lazy dog, and then it writes a short JSON object: "
                "{\"name\": \"fox\", \"legs\": 4}. Speculative decoding drafts tokens cheaply. ";
    }
    const std::vector<llama_token> tokens = tokenize(vocab, text, /*add_special =*/true);
    const std::vector<llama_token> a = greedy_choices(draft.get(), tokens);
    const std::vector<llama_token> b = greedy_choices(target.get(), tokens);
    if (a.empty() || a.size() != b.size()) {
        return -1.0;
    }
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        same += a[i] == b[i];
    }
    const double agreement = double(same) / double(a.size());
    std::printf("%s vs %s: agreement %.3f on %zu text positions\n", draft_name, target_name, agreement, a.size());
    return agreement;
}

class testmodel : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        llama_log_set([](ggml_log_level level, const char * text, void *) {
            if (level == GGML_LOG_LEVEL_ERROR) {
                std::fputs(text, stderr);
            }
        }, nullptr);
        llama_backend_init();
    }

    void SetUp() override {
        if (!std::getenv("SPECD_FIXTURES")) {
            GTEST_SKIP() << "SPECD_FIXTURES is not set (ctest sets it after fixtures.generate)";
        }
    }
};

TEST_F(testmodel, tiny_has_the_phi3_vocab) {
    llama_model_ptr model = load("tiny.gguf");
    ASSERT_TRUE(model);
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(model.get())), 32064);
    EXPECT_EQ(llama_model_n_embd(model.get()), 64);
}

TEST_F(testmodel, tiny_roundtrips_text) {
    llama_model_ptr model = load("tiny.gguf");
    ASSERT_TRUE(model);
    const llama_vocab * vocab = llama_model_get_vocab(model.get());
    const std::string text = "Hello world";

    const std::vector<llama_token> tokens = tokenize(vocab, text, /*add_special =*/false);
    ASSERT_FALSE(tokens.empty());
    EXPECT_LT(tokens.size(), text.size()) << "a real tokenizer merges characters into words";

    std::string back(text.size() * 2 + 16, '\0');
    const int32_t n = llama_detokenize(vocab, tokens.data(), int32_t(tokens.size()), back.data(),
                                       int32_t(back.size()), /*remove_special =*/true, /*unparse_special =*/false);
    ASSERT_GE(n, 0);
    back.resize(size_t(n));
    EXPECT_EQ(back, text);
}

TEST_F(testmodel, chat_template_only_where_the_vocab_has_one) {
    llama_model_ptr tiny = load("tiny.gguf");
    llama_model_ptr spm = load("tiny-spm.gguf");
    ASSERT_TRUE(tiny && spm);
    const char * tmpl = llama_model_chat_template(tiny.get(), nullptr);
    ASSERT_NE(tmpl, nullptr);
    EXPECT_NE(std::string(tmpl).find("<|assistant|>"), std::string::npos) << "phi-3's template";
    EXPECT_EQ(llama_model_chat_template(spm.get(), nullptr), nullptr);
    EXPECT_EQ(llama_vocab_n_tokens(llama_model_get_vocab(spm.get())), 32000);
}

TEST_F(testmodel, greedy_generation_is_varied) {
    llama_model_ptr model = load("tiny.gguf");
    ASSERT_TRUE(model);
    const llama_vocab * vocab = llama_model_get_vocab(model.get());
    llama_context_ptr ctx = context(model.get(), 128);
    ASSERT_TRUE(ctx);

    std::vector<llama_token> prompt = tokenize(vocab, "Hello world", /*add_special =*/true);
    ASSERT_EQ(llama_decode(ctx.get(), llama_batch_get_one(prompt.data(), int32_t(prompt.size()))), 0);

    const int32_t n_vocab = llama_vocab_n_tokens(vocab);
    std::vector<llama_token> generated;
    for (int i = 0; i < 32; ++i) {
        llama_token next = argmax(llama_get_logits_ith(ctx.get(), -1), n_vocab);
        generated.push_back(next);
        ASSERT_EQ(llama_decode(ctx.get(), llama_batch_get_one(&next, 1)), 0);
    }
    const std::set<llama_token> distinct(generated.begin(), generated.end());
    EXPECT_GT(distinct.size(), 3u);
}

TEST_F(testmodel, pair_agrees_as_calibrated) {
    const double agreement = pair_agreement("pair-draft.gguf", "pair-target.gguf"); // made for 0.8
    EXPECT_GT(agreement, 0.65);
    EXPECT_LT(agreement, 0.95) << "the target must differ from the draft";
}

TEST_F(testmodel, low_pair_agrees_as_calibrated) {
    const double agreement = pair_agreement("pair-low-draft.gguf", "pair-low-target.gguf"); // made for 0.3
    EXPECT_GT(agreement, 0.15);
    EXPECT_LT(agreement, 0.45);
}

} // namespace
