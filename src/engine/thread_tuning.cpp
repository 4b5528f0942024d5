#include "engine/thread_tuning.h"

#include <algorithm>
#include <cmath>

namespace specd::engine {

std::vector<int32_t> thread_candidates(int32_t n_cpus) {
    n_cpus = std::max(1, n_cpus);
    std::vector<int32_t> out;
    for (int32_t p = 1; p < n_cpus; p *= 2) out.push_back(p);
    out.push_back(n_cpus);
    return out;
}

int32_t fastest_threads(std::span<const ThreadTiming> timings, double tie) {
    if (timings.empty()) return 0;
    double best = timings.front().step_s;
    for (const ThreadTiming & t : timings) best = std::min(best, t.step_s);
    int32_t choice = 0;
    for (const ThreadTiming & t : timings) {
        if (t.step_s <= best * (1.0 + tie) && (choice == 0 || t.n_threads < choice)) choice = t.n_threads;
    }
    return choice;
}

bool worth_going_on(std::span<const ThreadTiming> timings, double margin) {
    if (timings.empty()) return true;
    double best = timings.front().step_s;
    for (const ThreadTiming & t : timings) best = std::min(best, t.step_s);
    return timings.back().step_s <= best * (1.0 + margin);
}

StepDrift::StepDrift(double reference_s, double tolerance, int min_steps) :
    reference_s_(reference_s), tolerance_(tolerance), min_steps_(std::max(1, min_steps)) {}

bool StepDrift::observe(double step_s) {
    if (!(reference_s_ > 0.0) || !(step_s > 0.0)) return false;
    const double w = 1.0 / double(std::min(++steps_, min_steps_));
    mean_          = (1.0 - w) * mean_ + w * step_s;
    if (steps_ < min_steps_) return false;
    return std::abs(mean_ - reference_s_) > tolerance_ * reference_s_;
}

} // namespace specd::engine
