#include "metrics/registry.h"

#include <sstream>
#include <vector>

namespace specd::metrics {

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1) {}

void Histogram::observe(double v, int64_t times) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    buckets_[i].fetch_add(times, std::memory_order_relaxed);
    count_.fetch_add(times, std::memory_order_relaxed);
    double old = sum_.load(std::memory_order_relaxed);
    while (!sum_.compare_exchange_weak(old, old + v * times, std::memory_order_relaxed)) {}
}

std::string Histogram::exposition(const std::string & name, const std::string & help) const {
    std::ostringstream out;
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " histogram\n";
    int64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        out << name << "_bucket{le=\"";
        if (i < bounds_.size()) out << bounds_[i];
        else out << "+Inf";
        out << "\"} " << cumulative << "\n";
    }
    out << name << "_sum " << sum_.load(std::memory_order_relaxed) << "\n";
    out << name << "_count " << count_.load(std::memory_order_relaxed) << "\n";
    return out.str();
}

void Histogram::append_sample(std::vector<double> & out) const {
    for (const auto & b : buckets_) out.push_back(double(b.load(std::memory_order_relaxed)));
    out.push_back(double(count_.load(std::memory_order_relaxed)));
    out.push_back(sum_.load(std::memory_order_relaxed));
}

size_t Histogram::add_difference(const std::vector<double> & now, const std::vector<double> & before, size_t at) {
    const auto delta = [&](size_t i) { return now[i] - (i < before.size() ? before[i] : 0.0); };
    for (auto & b : buckets_) b.fetch_add(int64_t(delta(at++)), std::memory_order_relaxed);
    count_.fetch_add(int64_t(delta(at++)), std::memory_order_relaxed);
    const double d = delta(at++);
    double old = sum_.load(std::memory_order_relaxed);
    while (!sum_.compare_exchange_weak(old, old + d, std::memory_order_relaxed)) {}
    return at;
}

// The counters in sample order (the order of the struct), const or not.
template <class Self, class Fn> void ServerMetrics::each_counter(Self & m, Fn && fn) {
    for (auto * c : {&m.requests_total, &m.request_errors_total, &m.prompt_tokens_total, &m.generated_tokens_total,
                     &m.spec_rounds_total, &m.spec_drafted_total, &m.spec_accepted_total, &m.spec_zero_k_rounds_total,
                     &m.spec_probes_total, &m.spec_forced_total, &m.spec_forced_accepted_total,
                     &m.spec_grammar_truncated_total, &m.spec_grammar_truncated_rounds_total,
                     &m.spec_grammar_no_legal_draft_total, &m.queue_rejected_total, &m.model_evictions_total,
                     &m.model_loads_total}) {
        fn(*c);
    }
}

std::vector<double> ServerMetrics::sample() const {
    std::vector<double> out;
    each_counter(*this, [&](const Counter & c) { out.push_back(double(c.value())); });
    spec_depth.append_sample(out);
    batch_requests.append_sample(out);
    return out;
}

void ServerMetrics::add_difference(const std::vector<double> & now, const std::vector<double> & before) {
    if (now.size() != sample().size() || (!before.empty() && before.size() != now.size())) return;
    size_t at = 0;
    each_counter(*this, [&](Counter & c) {
        c.add(int64_t(now[at] - (before.empty() ? 0.0 : before[at])));
        ++at;
    });
    at = spec_depth.add_difference(now, before, at);
    batch_requests.add_difference(now, before, at);
}

std::string ServerMetrics::exposition() const {
    std::ostringstream out;
    auto counter = [&](const char * name, const char * help, const Counter & c) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << c.value() << "\n";
    };
    counter("specd_requests_total", "Generation requests finished.", requests_total);
    counter("specd_request_errors_total", "Generation requests that ended in an error.", request_errors_total);
    counter("specd_prompt_tokens_total", "Prompt tokens evaluated (cache hits excluded).", prompt_tokens_total);
    counter("specd_generated_tokens_total", "Tokens generated.", generated_tokens_total);
    counter("specd_spec_rounds_total", "Decode rounds.", spec_rounds_total);
    counter("specd_spec_drafted_total", "Draft tokens proposed.", spec_drafted_total);
    counter("specd_spec_accepted_total", "Draft tokens accepted by the target.", spec_accepted_total);
    counter("specd_spec_zero_k_rounds_total", "Rounds that planned no drafts.", spec_zero_k_rounds_total);
    counter("specd_spec_probes_total", "Probing rounds out of depth 0.", spec_probes_total);
    counter("specd_spec_forced_total", "Tokens proposed from text the grammar forces.", spec_forced_total);
    counter("specd_spec_forced_accepted_total", "Grammar-forced tokens the target accepted.",
            spec_forced_accepted_total);
    counter("specd_spec_grammar_truncated_total", "Draft tokens cut at the first token the grammar forbids.",
            spec_grammar_truncated_total);
    counter("specd_spec_grammar_truncated_rounds_total", "Rounds whose draft the grammar cut.",
            spec_grammar_truncated_rounds_total);
    counter("specd_spec_grammar_no_legal_draft_total", "Rounds whose draft the grammar forbade from its first token.",
            spec_grammar_no_legal_draft_total);
    counter("specd_queue_rejected_total", "Requests refused with 503 because their model's queue was full.",
            queue_rejected_total);
    counter("specd_model_evictions_total", "Idle models unloaded to make room for another model.",
            model_evictions_total);
    counter("specd_model_loads_total", "Models loaded (their weights read into a runner).", model_loads_total);
    out << spec_depth.exposition("specd_spec_depth", "Draft tokens per decode round.");
    out << batch_requests.exposition("specd_batch_requests", "Requests sharing one batched decode step.");
    return out.str();
}

ServerMetrics & server_metrics() {
    static ServerMetrics m;
    return m;
}

} // namespace specd::metrics
