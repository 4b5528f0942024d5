#include "spec/batch_depth.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

using specd::spec::BatchDepth;
using specd::spec::BatchDepthConfig;

namespace {

// Expected tokens by depth of a drafter whose every position is accepted with `alpha`.
std::vector<double> geometric(double alpha, int deepest) {
    std::vector<double> e(size_t(deepest) + 1, 1.0);
    double              a = 1.0;
    for (int d = 1; d <= deepest; ++d) {
        a *= alpha;
        e[size_t(d)] = e[size_t(d - 1)] + a;
    }
    return e;
}

// What steps of 4 requests cost on a machine whose target is not a line in its positions, as
// on the 2-core machine with bench/mtp.json's mtp_09 (16 positions cost about what 12 did):
// seconds by depth 0..8.
constexpr std::array<double, 9> k_step = {0.046, 0.070, 0.096, 0.096, 0.125, 0.150, 0.175, 0.200, 0.225};
// The cost model's line: 46 ms and 10 ms per depth.
double predicted(int d) { return 0.046 + 0.010 * d; }

double rate(const std::vector<std::vector<double>> & expected, const std::array<double, 9> & step, int d) {
    double tokens = 0.0;
    for (const auto & e : expected) tokens += e[size_t(d)];
    return tokens / step[size_t(d)];
}

int best_depth(const std::vector<std::vector<double>> & expected, const std::array<double, 9> & step) {
    int best = 1;
    for (int d = 1; d <= 8; ++d) {
        if (rate(expected, step, d) > rate(expected, step, best)) best = d;
    }
    return best;
}

} // namespace

// Four requests at acceptance 0.87: the line says depth 5, the steps as timed say 3. The
// choice starts on depth 1, then on the line's scaled by depth 1's steps, and moves one visit
// next door at a time; then it stays on 3 but for its visits.
TEST(BatchDepth, ChoosesTheDepthWhoseTimedStepsDeliverMost) {
    const std::vector<std::vector<double>> expected(4, geometric(0.87, 8));
    const int                              best = best_depth(expected, k_step);
    ASSERT_EQ(best, 3);
    int line = 1;
    for (int d = 1; d <= 8; ++d) {
        if (expected[0][size_t(d)] / predicted(d) > expected[0][size_t(line)] / predicted(line)) line = d;
    }
    ASSERT_EQ(line, 5); // what the cost model alone would pick

    std::mt19937                           rng(3);
    std::uniform_real_distribution<double> noise(0.95, 1.05);
    BatchDepth                             choice;
    int                                    on_best = 0;
    for (int step = 0; step < 400; ++step) {
        const int d = choice.choose(4, expected, predicted);
        ASSERT_GE(d, 1);
        ASSERT_LE(d, 8);
        choice.observe(4, d, k_step[size_t(d)] * noise(rng));
        if (step >= 200 && d == best) ++on_best;
    }
    EXPECT_GE(on_best, 180); // of 200: visits of 2 steps every 32
    EXPECT_GT(choice.seconds(4, 2), 0.0);
    EXPECT_GT(choice.seconds(4, 4), 0.0);
}

// A depth not timed yet is rated by the prediction, scaled as the nearest timed depth's steps
// compare with theirs: steps timed at twice the line make every depth twice as dear, and the
// choice is the line's.
TEST(BatchDepth, RatesDepthsNotTimedByTheNearestTimedOne) {
    const std::vector<std::vector<double>> expected(2, geometric(0.6, 8));
    BatchDepth                             choice;
    for (int i = 0; i < 3; ++i) choice.observe(2, 1, 2.0 * predicted(1)); // the first is not counted
    int line = 1;
    for (int d = 1; d <= 8; ++d) {
        if (expected[0][size_t(d)] / predicted(d) > expected[0][size_t(line)] / predicted(line)) line = d;
    }
    EXPECT_EQ(choice.choose(2, expected, predicted), line);
    EXPECT_NEAR(choice.seconds(2, 1), 2.0 * predicted(1), 1e-12);
    EXPECT_EQ(choice.seconds(2, 3), 0.0);
    EXPECT_EQ(choice.seconds(3, 1), 0.0); // each batch size its own
}

// The chosen depth's steps get dearer (the contexts grew, another process): the choice moves
// to the depth that now delivers more.
TEST(BatchDepth, MovesWhenTheChosenDepthGetsDearer) {
    const std::vector<std::vector<double>> expected(4, geometric(0.87, 8));
    std::array<double, 9>                  step = k_step;
    BatchDepth                             choice;
    for (int i = 0; i < 200; ++i) {
        const int d = choice.choose(4, expected, predicted);
        choice.observe(4, d, step[size_t(d)]);
    }
    ASSERT_EQ(choice.choose(4, expected, predicted), 3);
    step[3]         = 0.140;
    const int after = best_depth(expected, step);
    ASSERT_NE(after, 3);
    int on_after = 0;
    for (int i = 0; i < 200; ++i) {
        const int d = choice.choose(4, expected, predicted);
        choice.observe(4, d, step[size_t(d)]);
        if (i >= 100 && d == after) ++on_after;
    }
    EXPECT_GE(on_after, 90);
}

// Requests that may draft less than others (their cap, their reach) count with their deepest;
// with none that may draft there is nothing to choose.
TEST(BatchDepth, RequestsDraftAtMostTheirDeepest) {
    BatchDepth choice(BatchDepthConfig{.explore_every = 1000, .prefer_shallow = 0.0});
    EXPECT_EQ(choice.choose(3, {{1.0}, {1.0}, {1.0}}, predicted), 0);
    EXPECT_EQ(choice.choose(2, {}, predicted), 0);
    for (int i = 0; i < 3; ++i) choice.observe(2, 1, predicted(1));
    // One request reaches 2, the other 8: depth 2 and beyond cost the same per token to the
    // first, so the deeper one's acceptance decides.
    const int d = choice.choose(2, {geometric(0.99, 2), geometric(0.99, 8)}, predicted);
    EXPECT_GE(d, 3);
    EXPECT_LE(d, 8);
    EXPECT_LE(choice.choose(2, {geometric(0.99, 2), geometric(0.99, 2)}, predicted), 2);
}

// Until a depth was timed at a batch size its steps draft 1, whatever the cost model says:
// on a fresh server it chose depths 2-4 at 4 streams where depth 1 delivered most. Once two
// steps at depth 1 were timed (as the line predicts) after the first, which is not counted,
// the choice is the line's.
TEST(BatchDepth, DraftsOneUntilADepthWasTimed) {
    const std::vector<std::vector<double>> expected(4, geometric(0.87, 8));
    BatchDepth                             choice(BatchDepthConfig{.explore_every = 1000});
    EXPECT_EQ(choice.choose(4, expected, predicted), 1);
    choice.observe(4, 1, 3.0 * predicted(1)); // a shape's first step: not counted
    choice.observe(4, 1, predicted(1));
    EXPECT_EQ(choice.choose(4, expected, predicted), 1); // one step is not a time yet
    choice.observe(4, 1, predicted(1));
    // The line: depth 5 delivers most, 4 is within 3% of it.
    EXPECT_EQ(choice.choose(4, expected, predicted), 4);
    EXPECT_EQ(choice.choose(3, expected, predicted), 1); // each batch size its own
}

// The machine stalls now and then: a step 20x slower counts at 1.5x its depth's time.
TEST(BatchDepth, AStalledStepCountsAtABound) {
    BatchDepth choice;
    for (int i = 0; i < 10; ++i) choice.observe(4, 3, 0.1);
    choice.observe(4, 3, 2.0);
    EXPECT_LT(choice.seconds(4, 3), 0.1 * 1.5);
    EXPECT_GT(choice.seconds(4, 3), 0.1);
}

// Near the best the rate hardly changes with depth, and the tokens of deep positions are
// estimates: a deeper depth must promise 3% more than the shallowest one within that margin.
TEST(BatchDepth, TakesTheShallowestDepthWithinAFewPercentOfTheBest) {
    // Tokens 2, 3, 4.08 at depths 1-3 against steps of 1, 1.5 and 2 s: 2, 2 and 2.04 a second.
    const std::vector<std::vector<double>> expected = {{1.0, 2.0, 3.0, 4.08}};
    const auto                             line     = [](int d) { return 0.5 + 0.5 * d; };
    BatchDepth                             shallow(BatchDepthConfig{.explore_every = 1000});
    BatchDepth exact(BatchDepthConfig{.explore_every = 1000, .prefer_shallow = 0.0});
    for (int i = 0; i < 3; ++i) {
        shallow.observe(1, 1, line(1));
        exact.observe(1, 1, line(1));
    }
    EXPECT_EQ(shallow.choose(1, expected, line), 1);
    EXPECT_EQ(exact.choose(1, expected, line), 3);
    // 5% ahead is ahead.
    const std::vector<std::vector<double>> ahead = {{1.0, 2.0, 3.0, 4.2}};
    EXPECT_EQ(shallow.choose(1, ahead, line), 3);
}

// The first step of a batch size and depth pays for the shape's first decode: it is not
// counted, however slow.
TEST(BatchDepth, LeavesAShapesFirstStepOut) {
    BatchDepth choice;
    choice.observe(4, 2, 0.5);
    EXPECT_EQ(choice.seconds(4, 2), 0.0);
    choice.observe(4, 2, 0.1);
    choice.observe(4, 2, 0.1);
    EXPECT_NEAR(choice.seconds(4, 2), 0.1, 1e-12);
    choice.observe(3, 2, 0.1); // each batch size its own
    choice.observe(3, 2, 0.1);
    EXPECT_EQ(choice.seconds(3, 2), 0.0);
}

// gemma4's assistant at 4 streams on the 2-core machine (bench/heads.json's g4head09, a step
// log): the cost model's line, scaled by depth 1's steps, rates depth 3 below depth 2, yet
// timed, depth 3's steps deliver most; and each depth's first step took 60 ms more than the
// ones after it. A fresh batch size finds depth 3 within a few dozen steps and stays there.
TEST(BatchDepth, FindsTheBestDepthSoonWhereTheLineRatesItLow) {
    const std::vector<std::vector<double>> expected(4, geometric(0.85, 8));
    constexpr std::array<double, 9> step = {0.090, 0.110, 0.1436, 0.162, 0.200, 0.240, 0.280, 0.320, 0.360};
    const auto line = [](int d) { return 0.05 + 0.03 * d; };
    ASSERT_EQ(best_depth(expected, step), 3);
    // The line scaled by depth 1's steps rates depth 3 below depth 2.
    std::array<double, 9> by_line{};
    for (int d = 1; d <= 8; ++d) by_line[size_t(d)] = line(d) * step[1] / line(1);
    ASSERT_LT(rate(expected, by_line, 3), rate(expected, by_line, 2));

    BatchDepth          choice;
    std::array<bool, 9> stepped{};
    int                 on_best = 0;
    for (int i = 0; i < 140; ++i) {
        const int d = choice.choose(4, expected, line);
        ASSERT_GE(d, 1);
        ASSERT_LE(d, 8);
        const double first = stepped[size_t(d)] ? 0.0 : 0.060;
        stepped[size_t(d)] = true;
        choice.observe(4, d, step[size_t(d)] + first);
        if (i >= 40 && d == 3) ++on_best;
    }
    EXPECT_GE(on_best, 90); // of 100: visits of 2 steps every 32
}
