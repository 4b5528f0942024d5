#include "engine/thread_tuning.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

using specd::engine::fastest_threads;
using specd::engine::runner_up;
using specd::engine::StepDrift;
using specd::engine::thread_candidates;
using specd::engine::ThreadTiming;
using specd::engine::ThreadTrial;
using specd::engine::worth_going_on;

TEST(ThreadCandidates, PowersOfTwoThenAllSmallestFirst) {
    const struct {
        int32_t              cpus;
        std::vector<int32_t> want;
    } cases[] = {
        {1, {1}},
        {2, {1, 2}},
        {3, {1, 2, 3}},
        {8, {1, 2, 4, 8}},
        {12, {1, 2, 4, 8, 12}},
        {0, {1}}, // an unknown count still gives one candidate
    };
    for (const auto & c : cases) EXPECT_EQ(thread_candidates(c.cpus), c.want) << c.cpus << " cpus";
}

TEST(FastestThreads, ShortestStepWinsAndNearTiesGoToFewerThreads) {
    const struct {
        std::vector<ThreadTiming> timings;
        int32_t                   want;
    } cases[] = {
        {{}, 0},
        {{{2, 0.010}, {1, 0.018}}, 2},                 // two threads clearly faster
        {{{2, 0.010}, {1, 0.0102}}, 1},                // within 3%: the smaller count
        {{{8, 0.020}, {4, 0.012}, {2, 0.015}}, 4},     // oversubscribed: the middle wins
        {{{4, 0.010}, {2, 0.0103}, {1, 0.0101}}, 1},   // all tied: the fewest
        {{{2, 0.004}, {1, 0.0045}}, 2},                // 12% slower is not a tie
    };
    for (const auto & c : cases) EXPECT_EQ(fastest_threads(c.timings), c.want);
}

TEST(WorthGoingOn, StopsOnceTheLastCountIsClearlySlower) {
    EXPECT_TRUE(worth_going_on(std::vector<ThreadTiming>{}));
    EXPECT_TRUE(worth_going_on(std::vector<ThreadTiming>{{1, 0.010}}));
    EXPECT_TRUE(worth_going_on(std::vector<ThreadTiming>{{1, 0.010}, {2, 0.011}}));
    EXPECT_FALSE(worth_going_on(std::vector<ThreadTiming>{{1, 0.010}, {2, 0.014}}));
    // A busy machine: two threads spin at a barrier whose other thread is not running.
    EXPECT_FALSE(worth_going_on(std::vector<ThreadTiming>{{1, 0.0003}, {2, 1.3}}));
    // Faster than the best so far: keep going.
    EXPECT_TRUE(worth_going_on(std::vector<ThreadTiming>{{1, 0.010}, {2, 0.006}}));
}

TEST(StepDrift, QuietWhileStepsMatchTheReference) {
    StepDrift drift(0.010);
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(drift.observe(i % 2 ? 0.011 : 0.009)) << i;
}

TEST(StepDrift, FiresWhenStepsSlowDownButNotBeforeEnoughSteps) {
    StepDrift drift(0.010, 0.35, 64);
    int fired_at = -1;
    for (int i = 0; i < 200 && fired_at < 0; ++i) {
        if (drift.observe(0.020)) fired_at = i;
    }
    EXPECT_EQ(fired_at, 63); // the first verdict comes after min_steps steps
}

TEST(StepDrift, FiresWhenStepsSpeedUp) {
    // Another process left the CPUs: more threads may pay now.
    StepDrift drift(0.010);
    bool fired = false;
    for (int i = 0; i < 200 && !fired; ++i) fired = drift.observe(0.005);
    EXPECT_TRUE(fired);
}

TEST(StepDrift, AShortBurstDoesNotFire) {
    StepDrift drift(0.010);
    for (int i = 0; i < 200; ++i) ASSERT_FALSE(drift.observe(0.010));
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(drift.observe(0.050)) << i;
}

TEST(StepDrift, IgnoresNonsense) {
    StepDrift unmeasured(0.0);
    for (int i = 0; i < 100; ++i) EXPECT_FALSE(unmeasured.observe(1.0));
    StepDrift drift(0.010);
    for (int i = 0; i < 100; ++i) EXPECT_FALSE(drift.observe(-1.0));
}

TEST(RunnerUp, TheFastestOtherCount) {
    const std::vector<ThreadTiming> t{{1, 0.030}, {2, 0.026}, {4, 0.028}};
    EXPECT_EQ(runner_up(t, 2), 4);
    EXPECT_EQ(runner_up(t, 4), 2);
    EXPECT_EQ(runner_up(std::vector<ThreadTiming>{{1, 0.030}}, 1), 0); // nothing else timed
    EXPECT_EQ(runner_up(std::vector<ThreadTiming>{}, 1), 0);
}

namespace {

// Drives a trial for `steps` one-token steps whose time depends only on the count they ran
// on; returns how many ran on each count.
std::map<int32_t, int> run_trial(ThreadTrial & trial, int steps, std::map<int32_t, double> step_s) {
    std::map<int32_t, int> ran;
    for (int i = 0; i < steps; ++i) {
        const int32_t n = trial.next();
        ++ran[n];
        trial.observe(n, step_s.at(n));
    }
    return ran;
}

} // namespace

TEST(ThreadTrial, SwitchesWhenTheRunnerUpIsFasterOnRealSteps) {
    // Calibration chose 1 thread (a busy moment at load); on real steps 2 are 20% faster.
    ThreadTrial trial(1, 2);
    int switched_at = -1;
    for (int i = 0; i < 200 && switched_at < 0; ++i) {
        const int32_t n = trial.next();
        if (trial.observe(n, n == 2 ? 0.020 : 0.025)) switched_at = i;
    }
    // Every 4th step is a trial: the 8th trial step gives the verdict.
    EXPECT_EQ(switched_at, 31);
    EXPECT_EQ(trial.chosen(), 2);
    EXPECT_EQ(trial.other(), 1);
    EXPECT_DOUBLE_EQ(trial.recent_s(2), 0.020);
}

TEST(ThreadTrial, KeepsAGoodChoiceAndTriesLessAndLessOften) {
    ThreadTrial trial(2, 1);
    const auto ran = run_trial(trial, 4000, {{1, 0.025}, {2, 0.020}});
    EXPECT_EQ(trial.chosen(), 2);
    // Intervals 4, 8, 16, 32, then 64: about 1 step in 50 ran on the slower count, not 1 in 4.
    EXPECT_GT(ran.at(1), 8 * 4);
    EXPECT_LT(ran.at(1), 4000 / 40);
}

TEST(ThreadTrial, ANearTieKeepsTheChoice) {
    ThreadTrial trial(1, 2);
    run_trial(trial, 2000, {{1, 0.0200}, {2, 0.0198}}); // 1% faster: within the margin
    EXPECT_EQ(trial.chosen(), 1);
}

TEST(ThreadTrial, SwitchesBackWhenTheMachineChanges) {
    ThreadTrial trial(1, 2);
    run_trial(trial, 200, {{1, 0.025}, {2, 0.020}});
    ASSERT_EQ(trial.chosen(), 2);
    // Another process took a CPU: two threads now wait at every barrier.
    run_trial(trial, 400, {{1, 0.025}, {2, 0.060}});
    EXPECT_EQ(trial.chosen(), 1);
}

TEST(ThreadTrial, OneNoisyStepDoesNotDecide) {
    // Medians over the recent steps: a burst on a few trial steps of the faster count is outvoted.
    ThreadTrial trial(2, 1);
    int i = 0;
    for (int steps = 0; steps < 600; ++steps) {
        const int32_t n = trial.next();
        double        s = n == 2 ? 0.020 : 0.025;
        if (n == 2 && ++i % 5 == 0) s = 0.5; // every 5th step on 2 threads is a stall
        trial.observe(n, s);
    }
    EXPECT_EQ(trial.chosen(), 2);
}

TEST(ThreadTrial, NothingToTryWithOneCount) {
    ThreadTrial trial(2, 2);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(trial.next(), 2);
    EXPECT_FALSE(trial.observe(2, 0.01));
    EXPECT_FALSE(trial.observe(3, 0.01)); // a count it never offered
    EXPECT_EQ(trial.chosen(), 2);
}
