#include "engine/thread_tuning.h"

#include <gtest/gtest.h>

#include <vector>

using specd::engine::fastest_threads;
using specd::engine::StepDrift;
using specd::engine::thread_candidates;
using specd::engine::ThreadTiming;
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
