#include "spec/drafting_gate.h"

#include <gtest/gtest.h>

using specd::spec::DraftingGate;

namespace {

// Plays `steps` steps at `batch`: a drafting step delivers `draft_rate` tokens per second, a
// plain one `plain_rate` (one second each); returns how many steps drafted.
int play(DraftingGate & gate, int batch, double draft_rate, double plain_rate, int steps) {
    int drafted = 0;
    for (int i = 0; i < steps; ++i) {
        const bool draft = gate.allow(batch);
        drafted += draft ? 1 : 0;
        gate.observe(batch, draft, draft ? draft_rate : plain_rate, 1.0);
    }
    return drafted;
}

} // namespace

// Drafting that delivers less than not drafting stops, but for the visits that check it.
TEST(DraftingGate, StopsDraftingThatIsSlowerThanNone) {
    DraftingGate gate;
    play(gate, 4, 94.0, 100.0, 100); // both arms measured
    const int drafted = play(gate, 4, 94.0, 100.0, 1000);
    EXPECT_GT(drafted, 0);     // it looks again now and then
    EXPECT_LT(drafted, 100);   // ... but mostly does not draft
    EXPECT_NEAR(gate.rate(4, true), 94.0, 1e-9);
    EXPECT_NEAR(gate.rate(4, false), 100.0, 1e-9);
}

// Drafting that pays goes on, with few plain steps; the further ahead, the fewer.
TEST(DraftingGate, KeepsDraftingThatPays) {
    DraftingGate gate;
    play(gate, 1, 150.0, 100.0, 100);
    const int clear = play(gate, 1, 150.0, 100.0, 1000);
    EXPECT_GT(clear, 980);
    DraftingGate close;
    play(close, 1, 108.0, 100.0, 100);
    const int ahead = play(close, 1, 108.0, 100.0, 1000);
    EXPECT_GT(ahead, 900);
    EXPECT_LT(ahead, clear);
}

// Within the margin drafting goes on (noise must not turn it off).
TEST(DraftingGate, ToleratesAMarginOfNoise) {
    DraftingGate gate;
    play(gate, 2, 98.0, 100.0, 100);
    EXPECT_GT(play(gate, 2, 98.0, 100.0, 1000), 900);
}

// Batch sizes are measured apart: drafting can pay alone and not in a batch of four.
TEST(DraftingGate, DecidesPerBatchSize) {
    DraftingGate gate;
    for (int i = 0; i < 300; ++i) {
        const bool one  = gate.allow(1);
        gate.observe(1, one, one ? 150.0 : 100.0, 1.0);
        const bool four = gate.allow(4);
        gate.observe(4, four, four ? 90.0 : 100.0, 1.0);
    }
    EXPECT_GT(play(gate, 1, 150.0, 100.0, 200), 190);
    EXPECT_LT(play(gate, 4, 90.0, 100.0, 200), 30);
}

// Drafting far behind is visited less often than drafting just behind: each visit costs its
// steps and the drafts' catching up.
TEST(DraftingGate, VisitsClearlySlowerDraftingRarely) {
    DraftingGate close;
    play(close, 4, 94.0, 100.0, 100);
    const int near_visits = play(close, 4, 94.0, 100.0, 1024);
    DraftingGate far;
    play(far, 4, 75.0, 100.0, 100);
    const int far_visits = play(far, 4, 75.0, 100.0, 1024);
    EXPECT_GT(far_visits, 0);
    EXPECT_LE(far_visits * 3, near_visits);
}

// When drafting turns out to pay after all (the costs changed), a visit finds it.
TEST(DraftingGate, FindsDraftingThatStartsToPay) {
    DraftingGate gate;
    play(gate, 4, 80.0, 100.0, 300);
    EXPECT_LT(play(gate, 4, 80.0, 100.0, 100), 15);
    play(gate, 4, 140.0, 100.0, 1200); // now drafting delivers more
    EXPECT_GT(play(gate, 4, 140.0, 100.0, 200), 190);
}

// Before both arms are measured, plain steps are mixed in so that the comparison can start.
TEST(DraftingGate, MeasuresBothArmsFirst) {
    DraftingGate gate;
    int plain = 0;
    for (int i = 0; i < 32; ++i) {
        const bool draft = gate.allow(3);
        plain += draft ? 0 : 1;
        gate.observe(3, draft, 100.0, 1.0);
    }
    EXPECT_GE(plain, 8);
    EXPECT_GT(gate.rate(3, false), 0.0);
    EXPECT_GT(gate.rate(3, true), 0.0);
}
