// Sizing a model before it loads: num_ctx clamped to the trained context, sequences chosen
// from the budget without multiplying a long context, and a ceiling on a model's context.
#include "core/error.h"
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

TEST(LoadEstimate, DefaultParallelFitsTheBudgetAndKeepsLongContextsSingle) {
    LoadEstimate e;
    e.weights    = 100;
    e.kv_per_seq = 10;
    e.n_ctx      = 4096;
    EXPECT_EQ(default_parallel(e, 1000), k_default_parallel_max);
    EXPECT_EQ(default_parallel(e, 125), 2);
    EXPECT_EQ(default_parallel(e, 90), 1); // not even the weights: one sequence, the budget decides
    e.n_ctx = 32768;
    EXPECT_EQ(default_parallel(e, 1000), 4); // 4 x 32768 = 2^17 tokens
    e.n_ctx = 65536;
    EXPECT_EQ(default_parallel(e, 1000), 2);
    e.n_ctx = 1 << 20;
    EXPECT_EQ(default_parallel(e, 1000), 1);
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
