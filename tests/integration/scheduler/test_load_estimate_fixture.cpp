// The memory estimate against what llama.cpp allocates on the fixture: the session's contexts
// (KV and compute, for batches and contexts of several sizes) and the embedding context. The
// estimate decides what SPECD_MAX_MEMORY admits, so it may not fall far short of either.
#include "engine/embedder.h"
#include "engine/session.h"
#include "scheduler/load_estimate.h"

#include "../engine/fixtures.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::scheduler;

namespace {

// Within 10% either way.
void expect_near(uint64_t estimate, uint64_t actual, const std::string & what) {
    EXPECT_GE(double(estimate), 0.9 * double(actual)) << what << ": estimate " << estimate << ", allocated " << actual;
    EXPECT_LE(double(estimate), 1.1 * double(actual)) << what << ": estimate " << estimate << ", allocated " << actual;
}

} // namespace

TEST(LoadEstimateFixture, SessionKvAndComputeAreWhatLlamaAllocates) {
    auto       model = fixtures::shared_model("tiny.gguf");
    ModelFiles files;
    files.gguf = fixtures::fixture("tiny.gguf");
    const struct {
        int32_t num_ctx, num_batch;
        int     n_seq;
    } cases[] = {{4096, 512, 1}, {4096, 4096, 1}, {2048, 64, 4}, {8192, 8192, 2}};
    for (const auto & c : cases) {
        ContextOptions opts;
        opts.num_ctx   = c.num_ctx;
        opts.num_batch = c.num_batch;
        opts.num_thread = 1;
        const LoadEstimate       e = estimate_load(files, opts);
        engine::Session          s(model, opts, nullptr, {}, c.n_seq);
        const std::string        what = std::to_string(c.num_ctx) + "/" + std::to_string(c.num_batch) + " x" + std::to_string(c.n_seq);
        const engine::SessionMemory & mem = s.memory();
        expect_near(e.kv_per_seq * uint64_t(c.n_seq), mem.target.kv, what + " KV");
        expect_near(e.compute(c.n_seq), mem.target.compute, what + " compute");
    }
}

// With a draft model: its one context holds every sequence (engine/draft_context).
TEST(LoadEstimateFixture, ADraftModelsContextIsWhatLlamaAllocates) {
    auto       target = fixtures::shared_model("pair-target.gguf");
    auto       draft  = fixtures::shared_model("pair-draft.gguf");
    ModelFiles files;
    files.gguf  = fixtures::fixture("pair-target.gguf");
    files.draft = fixtures::fixture("pair-draft.gguf");
    for (const int n_seq : {1, 4}) {
        ContextOptions opts;
        opts.num_ctx    = 2048;
        opts.num_batch  = 512;
        opts.num_thread = 1;
        const LoadEstimate            e = estimate_load(files, opts);
        engine::Session               s(target, opts, draft, {}, n_seq);
        const engine::SessionMemory & mem  = s.memory();
        const std::string             what = "target + draft x" + std::to_string(n_seq);
        expect_near(e.kv_per_seq * uint64_t(n_seq), mem.target.kv + mem.draft.kv, what + " KV");
        expect_near(e.compute(n_seq), mem.target.compute + mem.draft.compute, what + " compute");
    }
}

TEST(LoadEstimateFixture, TheEmbeddingContextIsWhatLlamaAllocates) {
    auto       model = fixtures::shared_model("tiny.gguf");
    ModelFiles files;
    files.gguf = fixtures::fixture("tiny.gguf");
    ContextOptions opts;
    opts.num_ctx = 1024;
    const LoadEstimate e = estimate_load(files, opts);
    engine::Embedder   embedder(model, uint32_t(opts.num_ctx), 1);
    // Its output buffer grows to its largest batch: one input of the whole context.
    std::atomic<bool>  cancel{false};
    const std::vector<llama_token> input(size_t(opts.num_ctx), llama_token(100));
    embedder.embed({input}, cancel);
    const engine::ContextBytes mem = embedder.memory();
    expect_near(e.embedder, mem.kv + mem.compute, "embedder at 1024");
}
