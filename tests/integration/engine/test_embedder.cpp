// Pooled embeddings on the tiny fixture model: deterministic, distinct per input, and the
// same for an input alone or packed with others in one batch.
#include "core/embedding.h"
#include "core/error.h"
#include "engine/embedder.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace specd;
using namespace specd::engine;

namespace {

std::vector<std::vector<llama_token>> tokenize_all(const Model & model, const std::vector<std::string> & texts) {
    std::vector<std::vector<llama_token>> out;
    for (const auto & t : texts) out.push_back(model.tokenize(t, true, false));
    return out;
}

double max_abs_diff(const std::vector<float> & a, const std::vector<float> & b) {
    EXPECT_EQ(a.size(), b.size());
    double d = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::abs(double(a[i]) - b[i]));
    return d;
}

double l2(const std::vector<float> & v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s);
}

class EmbedderTest : public ::testing::Test {
  protected:
    std::shared_ptr<Model> model = fixtures::shared_model("tiny.gguf");
    Embedder               embedder{model, 256, 1};
    std::atomic<bool>      cancel{false};

    std::vector<float> one(const std::string & text) {
        return embedder.embed(tokenize_all(*model, {text}), cancel).at(0);
    }
};

} // namespace

TEST_F(EmbedderTest, GenerativeModelIsMeanPooled) {
    EXPECT_EQ(embedder.pooling(), LLAMA_POOLING_TYPE_MEAN);
    EXPECT_EQ(embedder.n_embd(), llama_model_n_embd_out(model->get()));
    EXPECT_GT(embedder.memory().kv, 0u);
}

TEST_F(EmbedderTest, SameInputSameVectorAndUnitAfterNormalizing) {
    auto a = one("The sky is blue.");
    auto b = one("The sky is blue.");
    ASSERT_EQ(a.size(), size_t(embedder.n_embd()));
    EXPECT_EQ(a, b);
    EXPECT_GT(l2(a), 0.0);
    normalize_l2(a);
    EXPECT_NEAR(l2(a), 1.0, 1e-5);
}

TEST_F(EmbedderTest, DifferentInputsDifferentVectors) {
    EXPECT_GT(max_abs_diff(one("The sky is blue."), one("Grass is green, mostly.")), 1e-4);
}

TEST_F(EmbedderTest, BatchEqualsEachAlone) {
    const std::vector<std::string> texts = {"first", "a second and longer text", "third one", "4"};
    const auto batch = embedder.embed(tokenize_all(*model, texts), cancel);
    ASSERT_EQ(batch.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_LT(max_abs_diff(batch[i], one(texts[i])), 1e-4) << texts[i];
    }
}

TEST_F(EmbedderTest, MoreInputsThanOneBatchHolds) {
    // 40 inputs: more sequences than one batch takes (16), all answered in order.
    std::vector<std::string> texts;
    for (int i = 0; i < 40; ++i) texts.push_back("input number " + std::to_string(i));
    const auto batch = embedder.embed(tokenize_all(*model, texts), cancel);
    ASSERT_EQ(batch.size(), texts.size());
    EXPECT_LT(max_abs_diff(batch[37], one(texts[37])), 1e-4);
}

TEST_F(EmbedderTest, CancelledBeforeStartThrows) {
    cancel = true;
    try {
        one("hello");
        FAIL() << "expected cancellation";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    }
}

// Every token of an embedding batch is an output with logits: the memory the embedder reports
// grows with its largest batch, so the ledger sees what llama.cpp's output buffer holds.
TEST_F(EmbedderTest, MemoryCountsTheOutputBufferOfTheLargestBatch) {
    const size_t before = embedder.memory().compute;
    std::string  text;
    for (int i = 0; i < 40; ++i) text += " word";
    const auto tokens = tokenize_all(*model, {text});
    embedder.embed(tokens, cancel);
    const size_t per_output = (size_t(llama_vocab_n_tokens(model->vocab())) + size_t(embedder.n_embd())) * sizeof(float);
    EXPECT_GE(embedder.memory().compute, before + tokens[0].size() * per_output);
    // A smaller batch later does not shrink it (llama.cpp keeps the buffer).
    const size_t after = embedder.memory().compute;
    one("short");
    EXPECT_EQ(embedder.memory().compute, after);
}
