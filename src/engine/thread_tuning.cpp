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

int32_t runner_up(std::span<const ThreadTiming> timings, int32_t chosen) {
    int32_t best   = 0;
    double  best_s = 0.0;
    for (const ThreadTiming & t : timings) {
        if (t.n_threads == chosen) continue;
        if (best == 0 || t.step_s < best_s) {
            best   = t.n_threads;
            best_s = t.step_s;
        }
    }
    return best;
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

ThreadTrial::ThreadTrial(int32_t chosen, int32_t other, Config config) :
    config_(config), chosen_(chosen), other_(other) {
    config_.interval_min = std::max(2, config_.interval_min);
    config_.interval_max = std::max(config_.interval_min, config_.interval_max);
    config_.min_samples  = std::max(1, config_.min_samples);
    config_.window       = std::max(config_.min_samples, config_.window);
    interval_            = config_.interval_min;
}

int32_t ThreadTrial::next() {
    if (chosen_ == other_) return chosen_;
    if (++since_trial_ < interval_) return chosen_;
    since_trial_ = 0;
    return other_;
}

double ThreadTrial::recent_s(int32_t n_threads) const {
    const auto it = recent_.find(n_threads);
    if (it == recent_.end() || it->second.empty()) return 0.0;
    std::vector<double> v(it->second.begin(), it->second.end());
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    return v[v.size() / 2];
}

bool ThreadTrial::observe(int32_t n_threads, double step_s) {
    if (!(step_s > 0.0) || (n_threads != chosen_ && n_threads != other_)) return false;
    std::deque<double> & mine = recent_[n_threads];
    mine.push_back(step_s);
    if (mine.size() > size_t(config_.window)) mine.pop_front();
    // A verdict when a trial step completes the other count's evidence.
    if (n_threads != other_ || chosen_ == other_) return false;
    const size_t need = size_t(config_.min_samples);
    if (mine.size() < need || recent_[chosen_].size() < need) return false;
    const bool switch_over = recent_s(other_) < recent_s(chosen_) * (1.0 - config_.margin);
    if (switch_over) {
        std::swap(chosen_, other_);
        interval_ = config_.interval_min;
    } else {
        interval_ = std::min(interval_ * 2, config_.interval_max);
    }
    // The loser's evidence starts over: its next verdict rests on steps taken from now on.
    recent_[other_].clear();
    return switch_over;
}

} // namespace specd::engine
