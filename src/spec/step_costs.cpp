#include "spec/step_costs.h"

#include <algorithm>
#include <bit>

namespace specd::spec {

StepCosts::StepCosts(double forget, double age) : forget_(std::clamp(forget, 0.0, 1.0)), age_(std::clamp(age, 0.0, 1.0)) {}

int StepCosts::range(int beyond_first) {
    if (beyond_first <= 0) return 0;
    return std::min(k_ranges - 1, int(std::bit_width(unsigned(beyond_first))));
}

void StepCosts::add(int beyond_first, double seconds) {
    if (!(seconds > 0.0)) return;
    const double x = double(std::max(0, beyond_first));
    StepSums &   r = ranges_[size_t(range(beyond_first))];
    // The machine stalls now and then (another process, the page cache): a step slower than
    // k_spike x what its range's steps took, per position, counts at that bound. A range a
    // batch never reaches keeps its steps for long, a stalled one with them.
    if (r.w >= k_spike_min_weight) {
        const double bound = k_spike * (r.y / r.w) * (1.0 + x) / (1.0 + r.x / r.w);
        seconds            = std::min(seconds, bound);
    }
    for (StepSums & each : ranges_) each.fade(age_);
    r.fade(forget_);
    r.add(x, seconds);
}

StepSums StepCosts::sums() const {
    StepSums all;
    for (const StepSums & r : ranges_) all.merge(r);
    return all;
}

} // namespace specd::spec
