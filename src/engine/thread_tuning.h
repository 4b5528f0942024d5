#pragma once
// How many CPU threads a context decodes with, chosen by measuring rather than by a rule of
// thumb: the pure part (which counts to try, which measurement wins, when to look again).
// The timed decodes themselves are in cpu_threads.
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <vector>

namespace specd::engine {

// The thread counts worth timing on a machine with `n_cpus` usable CPUs: 1, the powers of two
// below n_cpus, and n_cpus itself, smallest first. Calibration stops going up once a count is
// clearly slower, so a count that oversubscribes a busy machine (whose steps can take a
// thousand times longer: spinning barriers whose other thread is not running) is timed once
// at most, and never on batches.
std::vector<int32_t> thread_candidates(int32_t n_cpus);

struct ThreadTiming {
    int32_t n_threads = 0;
    double  step_s    = 0.0; // median seconds of one timed decode
};

// The count with the shortest step; a count within `tie` (relative) of the fastest loses to
// a smaller one, which leaves CPU to everything else for no measurable cost. 0 when empty.
int32_t fastest_threads(std::span<const ThreadTiming> timings, double tie = 0.03);

// The count with the shortest step other than `chosen` (0 when there is none): what a
// ThreadTrial keeps trying against the choice.
int32_t runner_up(std::span<const ThreadTiming> timings, int32_t chosen);

// Whether timing the next count is still worth it: once a count is this much slower than the
// best so far, more threads will not win (decode time falls and then flattens or rises as
// threads are added).
bool worth_going_on(std::span<const ThreadTiming> timings, double margin = 0.25);

// Watches one-token decode steps at the chosen count and says when they have drifted from
// what calibration measured (another process took the CPUs, or left them), so the choice is
// measured again. Pure: times in, a verdict out.
class StepDrift {
  public:
    // `reference_s`: the calibrated step time; `tolerance`: the relative change that counts
    // as drift once `min_steps` steps have been averaged.
    explicit StepDrift(double reference_s, double tolerance = 0.35, int min_steps = 64);

    // One observed one-token step; true when the recent mean is outside the tolerance (the
    // caller measures again and starts a new StepDrift from the new reference).
    bool observe(double step_s);

    double reference() const { return reference_s_; }
    double recent() const { return mean_; }

  private:
    double reference_s_;
    double tolerance_;
    int    min_steps_;
    int    steps_ = 0;
    double mean_  = 0.0; // exponentially weighted, over about min_steps steps
};

// Keeps trying the calibrated one-token count against the runner-up on real steps.
// Calibration times a few steps at load, when the machine is often busy with something else
// for a moment (another server freeing its memory, the page cache filling, a virtual CPU the
// host took away): its verdict between two close counts is wrong often enough, and costs a
// fifth of the decode speed for the model's whole life when it is. Every `interval`th
// one-token step runs on the other count instead (real work, not a timed filler); once both
// counts have `min_samples` recent steps, the lower median wins. While the choice holds, the
// trials thin out (the interval doubles up to `interval_max`); a switch tries again soon.
// Pure: the caller decodes on next() and reports each step's time.
class ThreadTrial {
  public:
    struct Config {
        int    interval_min = 4;
        int    interval_max = 64;
        int    min_samples  = 8;    // recent steps per count before a verdict
        int    window       = 16;   // recent steps kept per count
        double margin       = 0.03; // the other count must be this much faster to take over
    };
    ThreadTrial(int32_t chosen, int32_t other, Config config);
    ThreadTrial(int32_t chosen, int32_t other) : ThreadTrial(chosen, other, Config{}) {}

    // The count for the next one-token step.
    int32_t next();
    // The step decoded on `n_threads` took `step_s`; true when the choice just changed.
    bool    observe(int32_t n_threads, double step_s);

    int32_t chosen() const { return chosen_; }
    int32_t other() const { return other_; }
    // Median of the recent steps on `n_threads` (0 when none).
    double  recent_s(int32_t n_threads) const;

  private:
    Config                             config_;
    int32_t                            chosen_;
    int32_t                            other_;
    int                                interval_;
    int                                since_trial_ = 0;
    std::map<int32_t, std::deque<double>> recent_;
};

} // namespace specd::engine
