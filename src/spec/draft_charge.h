#pragma once
// What each round of a batch step is charged for its drafts (the draft time its depth
// controller learns c_d from).
//
// The draft model or head drafts for every round of a step together, one decode per draft
// position for all of them (engine/draft_context, engine/head_context), and a decode costs a
// fixed part whatever the number of sequences in it. Charged by its share of the drafted
// tokens, a round that drafts alone in a batch pays that fixed part in full: four streams of
// gemma4's 288-wide assistant on 2 cores took 72 ms a step without drafts, 86 ms with one
// request drafting a token (+13 ms) and 106 ms with all four (+8 ms each), and those steps
// delivered 1.08x the tokens per second of plain ones. A request parked at depth 0 probes
// alone, is charged a dear draft and stays parked; so do the others, and the batch rarely
// drafts together.
//
// The controllers already plan a batch as if it drafted together (the target's fixed cost o
// is the batch's, DepthController::best_round). So a round is charged what its tokens cost
// when every generating round of the step drafts: the per-token draft time of such steps at
// that batch size, faded over the steps that measured it; never more than its share of this
// step's time, and its share itself until a step with every round drafting was measured.
// Whether drafting pays once the batch really drafts is the drafting gate's call
// (spec/drafting_gate), which times whole steps. Alone, a round pays the whole step's
// drafting.
#include <cstddef>
#include <span>
#include <vector>

namespace specd::spec {

class DraftCharge {
  public:
    explicit DraftCharge(double forget = 0.9);

    // One step's drafting: `generating` rounds in the step, `tokens[i]` the tokens drafted
    // for the i-th round that asked the drafter, `seconds` what drafting them all took.
    // Returns each asking round's seconds. A step in which every generating round drafted a
    // token or more measures the batch's cost per token.
    std::vector<double> charge(int generating, std::span<const size_t> tokens, double seconds);

    // Seconds per drafted token when every round of a batch of `generating` drafts together
    // (0: not measured yet).
    double together(int generating) const;

  private:
    struct Fade {
        double seconds = 0.0, tokens = 0.0;
    };
    double            forget_;
    std::vector<Fade> by_batch_; // [generating - 1]
};

} // namespace specd::spec
