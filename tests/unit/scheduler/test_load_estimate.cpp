// Sizing a model before it loads: num_ctx clamped to the trained context, sequences chosen
// from the budget without multiplying a long context, and a ceiling on a model's context.
#include "core/error.h"
#include "engine/session.h"
#include "scheduler/load_estimate.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::scheduler;

TEST(LoadEstimate, NumCtxIsClampedToTheTrainedContext) {
    EXPECT_EQ(effective_num_ctx(16 << 20, 4096), 4096);
    EXPECT_EQ(effective_num_ctx(2048, 4096), 2048);
    EXPECT_EQ(effective_num_ctx(1 << 20, 0), 1 << 20); // trained context unknown: as asked
    EXPECT_EQ(effective_num_ctx(0, 4096), 1);
}

constexpr uint64_t MiB = uint64_t(1) << 20;

TEST(LoadEstimate, DefaultParallelFitsTheBudgetAndKeepsLongContextsSingle) {
    LoadEstimate e;
    e.weights       = 100 * MiB;
    e.kv_per_seq    = 1 * MiB;
    e.n_ctx         = 4096;
    e.num_batch     = 512;
    e.out_per_token = 0; // compute: 512 tokens x 2 bytes x 4096 cells per sequence = 4 MiB each
    EXPECT_EQ(default_parallel(e, 1000 * MiB), k_default_parallel_max);
    EXPECT_EQ(default_parallel(e, 112 * MiB), 2); // 100 + 2 x (1 + 4); a third does not fit
    EXPECT_EQ(default_parallel(e, 90 * MiB), 1);  // not even the weights: one sequence, the budget decides
    e.n_ctx = 32768;
    EXPECT_EQ(default_parallel(e, 1000 * MiB), 4); // 4 x 32768 = 2^17 tokens
    e.n_ctx = 65536;
    EXPECT_EQ(default_parallel(e, 1000 * MiB), 2);
    e.n_ctx = 1 << 20;
    EXPECT_EQ(default_parallel(e, 1000 * MiB), 1);
}

// The compute buffer is sized for the largest decode: num_batch tokens (at most the whole
// context, at least a round per sequence), each with its output or its attention mask row.
TEST(LoadEstimate, ComputeGrowsWithTheBatchAndTheContext) {
    LoadEstimate e;
    e.n_ctx         = 4096;
    e.out_per_token = 4 * (32000 + 64);
    e.num_batch     = 512;
    EXPECT_EQ(e.compute(1), 512 * e.out_per_token);
    e.num_batch = 65536; // no more than the context
    EXPECT_EQ(e.compute(1), 4096 * e.out_per_token);
    e.num_batch = 1; // a round (last token, forced and drafted tokens) still fits
    EXPECT_EQ(e.compute(1), uint64_t(engine::batch_tokens(1, 4096, 1)) * e.out_per_token);
    EXPECT_GT(engine::batch_tokens(1, 4096, 1), 1);
    // A long context's mask outgrows the output: 2 bytes per KV cell, every sequence's.
    e.n_ctx     = 65536;
    e.num_batch = 65536;
    EXPECT_EQ(e.compute(2), uint64_t(65536) * 2 * 65536 * 2); // 17 GB, as llama.cpp allocates for it
    // A draft model has one context for all sequences, sized like the target's.
    e.n_ctx               = 4096;
    e.num_batch           = 512;
    e.draft_out_per_token = e.out_per_token;
    EXPECT_EQ(e.compute(2), 512 * e.out_per_token * 2);
    EXPECT_EQ(e.compute(4), 512 * e.out_per_token * 2);
    // gemma4's assistant decodes one token per sequence: its output for n_seq tokens only.
    e.draft_kind = engine::DraftKind::gemma4_assistant;
    EXPECT_EQ(e.compute(4), 512 * e.out_per_token + 4 * e.out_per_token);
    // EAGLE3 takes the target's decodes in micro-batches of 64 tokens.
    e.draft_kind = engine::DraftKind::eagle3;
    EXPECT_EQ(e.compute(4), 512 * e.out_per_token + 64 * e.out_per_token);
}

TEST(LoadEstimate, AContextOverTheCeilingIsABadRequestNamingIt) {
    LoadEstimate e;
    e.n_ctx = int32_t(k_max_context_tokens);
    EXPECT_NO_THROW(check_context_size(e, 1));
    try {
        check_context_size(e, 2);
        FAIL() << "expected a bad_request";
    } catch (const Error & err) {
        EXPECT_EQ(err.kind(), ErrorKind::bad_request);
        EXPECT_NE(std::string(err.what()).find("2097152"), std::string::npos) << err.what();
    }
    e.n_ctx = 4 << 20;
    EXPECT_THROW(check_context_size(e, 1), Error);
}
