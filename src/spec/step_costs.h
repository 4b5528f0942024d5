#pragma once
// What a step of the target costs by its positions, as one session's steps timed it.
//
// A request's DepthController fits its verify times on its own rounds (spec/step_fit.h).
// Alone, its rounds' positions run from 1 (a step without drafts) to its depth, and that
// separates t_1 from c_v. In a batch every step has at least as many positions as requests
// and they vary only by a few drafts, so the split is noise: on bench/heads.json's g4head09
// at 4 streams, requests of the same steps fitted t_1 from 40 to 118 ms (the one-token step
// is 43-47 ms) and c_v from 6.9 to 2.0 ms, and those that fitted a cheap position planned 7-8
// drafts where the others planned 2-3, so each step ran 7-8 head decodes.
//
// What a step costs is the target's on this machine, the same for every request: the session
// adds each timed step once, and keeps what it measured in each range of positions until that
// range is measured again (slowly ageing), so a batch's steps are fitted beside the one-token
// and few-position steps timed before them.
#include "spec/step_fit.h"

#include <array>

namespace specd::spec {

class StepCosts {
  public:
    // `forget`: per step timed in the same range of positions; `age`: per step, every range.
    explicit StepCosts(double forget = 0.95, double age = 0.998);

    // A timed step of 1 + `beyond_first` positions that took `seconds`.
    void add(int beyond_first, double seconds);

    // Every range's sums together (what fit_steps takes; w: their weight).
    StepSums sums() const;

  private:
    // Ranges of positions beyond the first: 0, 1, 2-3, 4-7, ..., 64 and more.
    static constexpr int    k_ranges           = 8;
    static constexpr double k_spike            = 1.5;
    static constexpr double k_spike_min_weight = 2.0;
    static int              range(int beyond_first);

    double                         forget_;
    double                         age_;
    std::array<StepSums, k_ranges> ranges_{};
};

} // namespace specd::spec
