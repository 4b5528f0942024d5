#pragma once
// Server-wide counters and histograms with a Prometheus text exposition. Lock-free to
// update (atomics); the set of series is fixed at construction.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace specd::metrics {

class Counter {
  public:
    void    add(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
    int64_t value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<int64_t> value_{0};
};

// Cumulative buckets with fixed upper bounds (le), as Prometheus expects.
class Histogram {
  public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double v, int64_t times = 1);
    // "# TYPE" line and every series of this histogram under `name`.
    std::string exposition(const std::string & name, const std::string & help) const;
    // Its buckets, then count, then sum (see ServerMetrics::sample).
    void append_sample(std::vector<double> & out) const;
    // Adds (now - before) from two samples of a histogram with the same bounds, starting at
    // `at`; returns the index after it.
    size_t add_difference(const std::vector<double> & now, const std::vector<double> & before, size_t at);

  private:
    std::vector<double>                bounds_;
    std::vector<std::atomic<int64_t>>  buckets_; // (bounds + 1): the last one is +Inf
    std::atomic<int64_t>               count_{0};
    std::atomic<double>                sum_{0.0};
};

struct ServerMetrics {
    Counter   requests_total;
    Counter   request_errors_total;
    Counter   prompt_tokens_total;
    Counter   generated_tokens_total;
    Counter   spec_rounds_total;
    Counter   spec_drafted_total;
    Counter   spec_accepted_total;
    Counter   spec_zero_k_rounds_total;
    Counter   spec_probes_total;
    Counter   spec_forced_total;
    Counter   spec_forced_accepted_total;
    Counter   spec_grammar_truncated_total;
    Counter   spec_grammar_truncated_rounds_total;
    Counter   spec_grammar_no_legal_draft_total;
    Histogram spec_depth{{0, 1, 2, 3, 4, 6, 8, 12, 16}}; // draft tokens per round
    Histogram batch_requests{{1, 2, 3, 4, 6, 8, 12, 16, 32}}; // requests sharing one decode step
    Counter   queue_rejected_total; // requests answered 503 because a model's queue was full
    Counter   model_evictions_total; // idle models unloaded to make room for another
    Counter   model_loads_total;     // models loaded (weights read), for any reason

    std::string exposition() const;

    // Every counter and histogram as numbers, in a fixed order. A runner process sends its
    // samples to the server, which adds what grew since the previous one: the server's /metrics
    // then counts the work of every runner, those that ended included.
    std::vector<double> sample() const;
    // Adds (now - before), two samples of another ServerMetrics; samples of another length
    // (another build) are ignored.
    void add_difference(const std::vector<double> & now, const std::vector<double> & before);

  private:
    template <class Self, class Fn> static void each_counter(Self & self, Fn && fn);
};

// The process's metrics (one server per process).
ServerMetrics & server_metrics();

} // namespace specd::metrics
