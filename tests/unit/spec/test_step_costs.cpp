#include "spec/step_costs.h"
#include "spec/step_fit.h"

#include <gtest/gtest.h>

#include <random>

using specd::spec::fit_steps;
using specd::spec::StepCosts;
using specd::spec::StepFit;
using specd::spec::StepSums;

namespace {

// A target step: t_1 + o once it has several positions, c_v per position beyond the first.
constexpr double k_t1 = 0.045, k_o = 0.005, k_cv = 0.006;
double step_time(int x) { return k_t1 + (x > 0 ? k_o : 0.0) + k_cv * x; }

StepFit fit(const StepCosts & steps) { return fit_steps(steps.sums(), 0.1, 0.1, 0.25); }

} // namespace

// Alone a request's steps run from 1 position to its depth; then four requests share every
// step and the positions only move between 15 and 17, each step a few percent off. The
// steps timed alone still separate t_1 from c_v: a single faded record of the same steps
// fits the batch's noise instead (on 4 of these 8 seeds t_1 came to 0.028-0.057 s).
TEST(StepCosts, KeepsTheFewPositionStepsWhileABatchRuns) {
    for (unsigned seed = 1; seed <= 8; ++seed) {
        std::mt19937                           rng(seed);
        std::uniform_real_distribution<double> noise(0.95, 1.05);
        StepCosts                              steps;
        for (int i = 0; i < 30; ++i) steps.add(i % 4, step_time(i % 4) * noise(rng));
        for (int i = 0; i < 300; ++i) {
            const int x = 15 + i % 3;
            steps.add(x, step_time(x) * noise(rng));
        }
        const StepFit f = fit(steps);
        EXPECT_NEAR(f.t_1, k_t1, 0.15 * k_t1) << "seed " << seed;
        EXPECT_NEAR(f.c_v, k_cv, 0.15 * k_cv) << "seed " << seed;
    }
}

// A range's steps are kept only until the range is measured again, and every range ages:
// one-token steps timed on a slower machine leave the fit once enough steps came after
// (the one-token step is then the prior's split of t_1 + o).
TEST(StepCosts, RangesNotMeasuredAgainAgeAway) {
    StepCosts steps;
    for (int i = 0; i < 30; ++i) steps.add(0, 2.0 * k_t1); // slower then
    for (int i = 0; i < 3000; ++i) {
        const int x = i % 2 == 0 ? 3 : 15;
        steps.add(x, step_time(x));
    }
    const StepFit f = fit(steps);
    EXPECT_LT(f.t_1, 1.2 * k_t1);
    EXPECT_NEAR(f.t_1 + f.o, k_t1 + k_o, 0.02 * k_t1);
    EXPECT_NEAR(f.c_v, k_cv, 0.02 * k_cv);
}

// The machine stalls now and then: one step 20x slower counts at 1.5x what its range took.
TEST(StepCosts, AStalledStepCountsAtABound) {
    StepCosts steps;
    for (int i = 0; i < 10; ++i) steps.add(0, k_t1);
    steps.add(0, 20.0 * k_t1);
    const StepSums s = steps.sums();
    EXPECT_LT(s.y / s.w, 1.1 * k_t1);
    EXPECT_GT(s.y / s.w, 1.01 * k_t1); // counted, at the bound
}

// Steps that cannot be timed are not steps.
TEST(StepCosts, UntimedStepsAreLeftOut) {
    StepCosts steps;
    steps.add(3, 0.0);
    steps.add(3, -1.0);
    EXPECT_EQ(steps.sums().w, 0.0);
    steps.add(3, step_time(3));
    EXPECT_GT(steps.sums().w, 0.0);
}

// The fit recovers a step's costs from steps of every size, and fixes a cost that comes out
// negative at 0.
TEST(StepFit, RecoversTheCostsAndNeverGoesNegative) {
    StepSums s;
    for (int x = 0; x <= 20; ++x) s.add(x, step_time(x));
    const StepFit f = fit_steps(s, 0.1, 0.1, 0.25);
    EXPECT_NEAR(f.t_1, k_t1, 0.02 * k_t1);
    EXPECT_NEAR(f.o, k_o, 0.1 * k_o);
    EXPECT_NEAR(f.c_v, k_cv, 0.02 * k_cv);

    StepSums shrinking; // more positions, cheaper: noise
    for (int x = 0; x <= 8; ++x) shrinking.add(x, 0.05 - 0.001 * x);
    const StepFit g = fit_steps(shrinking, 0.1, 0.1, 0.25);
    EXPECT_GE(g.c_v, 0.0);
    EXPECT_GE(g.o, 0.0);
    EXPECT_GT(g.t_1, 0.0);
    EXPECT_EQ(fit_steps(StepSums{}, 0.1, 0.1, 0.25).t_1, 0.0);
}
