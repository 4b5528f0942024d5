#include "spec/acceptance_pool.h"

#include <algorithm>

namespace specd::spec {

AcceptancePool::AcceptancePool(double forget, double forget_idle)
    : forget_(std::clamp(forget, 0.0, 1.0)), forget_idle_(std::clamp(forget_idle, 0.0, 1.0)) {}

void AcceptancePool::add(int accepted, bool rejected) {
    step_successes_ += std::max(0, accepted);
    step_failures_ += rejected ? 1.0 : 0.0;
    judged_ = judged_ || accepted > 0 || rejected;
}

void AcceptancePool::end_step() {
    const double f  = judged_ ? forget_ : forget_idle_;
    successes_      = f * successes_ + step_successes_;
    failures_       = f * failures_ + step_failures_;
    step_successes_ = 0.0;
    step_failures_  = 0.0;
    judged_         = false;
}

} // namespace specd::spec
