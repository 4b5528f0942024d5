#include "spec/drafting_gate.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace specd::spec {

void DraftingGate::Arm::add(double tok, double s, int pos) {
    const size_t at = size_t(samples % window);
    tokens[at]      = tok;
    seconds[at]     = s;
    positions[at]   = pos;
    ++samples;
}

double DraftingGate::Arm::rate(double spike, int last) const {
    const int kept = this->kept();
    if (kept == 0) return 0.0;
    last = std::clamp(last, 1, kept);
    // Seconds per position of each step: what a stall changes, whatever the step's drafts
    // delivered.
    std::array<double, window> per{};
    for (int i = 0; i < kept; ++i) per[size_t(i)] = seconds[size_t(i)] / std::max(positions[size_t(i)], 1);
    std::array<double, window> sorted = per;
    std::nth_element(sorted.begin(), sorted.begin() + kept / 2, sorted.begin() + kept);
    const double limit = spike * sorted[size_t(kept / 2)];
    double       tok = 0.0, sec = 0.0;
    for (int n = 1; n <= last; ++n) { // the newest first: slot (samples - n) % window
        const size_t i = size_t((samples - n) % window);
        if (per[i] > limit) continue;
        tok += tokens[i];
        sec += seconds[i];
    }
    return sec > 0.0 ? tok / sec : 0.0;
}

DraftingGate::DraftingGate(DraftingGateConfig config) : config_(config) {
    config_.min_samples   = std::max(1, config_.min_samples);
    config_.explore_every = std::max(1, config_.explore_every);
    config_.explore_len   = std::max(1, config_.explore_len);
}

DraftingGate::Batch & DraftingGate::at(int batch) {
    const size_t i = size_t(std::max(1, batch) - 1);
    if (batches_.size() <= i) batches_.resize(i + 1);
    return batches_[i];
}

double DraftingGate::rate(int batch, bool drafted) const {
    const size_t i = size_t(std::max(1, batch) - 1);
    if (i >= batches_.size()) return 0.0;
    return drafted ? batches_[i].draft.rate(config_.spike) : batches_[i].plain.rate(config_.spike);
}

const DraftingGate::Batch * DraftingGate::nearest_decided(int batch) const {
    const Batch * best = nullptr;
    int           gap  = 0;
    for (size_t i = 0; i < batches_.size(); ++i) {
        const int d = std::abs(int(i) + 1 - batch);
        // At equal distance the larger batch's choice: it is the one more likely to say plain.
        if (batches_[i].decided && d > 0 && (!best || d <= gap)) {
            best = &batches_[i];
            gap  = d;
        }
    }
    return best;
}

bool DraftingGate::allow(int batch) {
    Batch & b = at(batch);
    if (b.draft.samples < config_.min_samples || b.plain.samples < config_.min_samples) {
        // A batch size not measured yet, beside one that is: that one's choice, with the other
        // arm visited now and then so that this size's arms fill. The sizes a load passes
        // through on its way up or down (a wave of requests ending one by one) come a step or
        // two at a time: learning them apart drafted in those steps for many waves, each one
        // catching every sequence's draft up (4-stream waves of e3_06 on 2 cores: 120-150 ms
        // against a 65 ms plain step), for steps too few to gain anything.
        if (const Batch * n = nearest_decided(batch)) return visiting(b, config_.explore_every) != n->drafting;
        // None measured: drafting and plain steps in turn, so that both arms fill over the
        // same stretch of time (a controller parked at 0 fills the plain one anyway).
        if (b.plain.samples >= config_.min_samples) return true;
        return ++b.since_visit % 2 != 0;
    }
    // The arm not chosen on its last visits only: its older steps may come from a slower or
    // faster stretch of the machine's time than the chosen arm's window, which is the last
    // steps.
    const int    fresh      = std::min(2 * config_.explore_len, window);
    const int    draft_last = b.decided && !b.drafting ? fresh : window;
    const int    plain_last = b.decided && b.drafting ? fresh : window;
    const double draft      = b.draft.rate(config_.spike, draft_last);
    const double plain      = b.plain.rate(config_.spike, plain_last);
    b.drafting = draft >= (1.0 + (b.drafting ? config_.stop_lead : config_.start_lead)) * plain;
    const bool drafting_wins = b.drafting;
    if (!b.decided) {
        b.decided     = true;
        b.since_visit = 0;
        b.last_choice = drafting_wins;
    }
    // Either arm far ahead: the other is visited 4x less often; and the gap doubles with every
    // visit that found the choice as it was.
    const bool    clear = drafting_wins ? draft >= config_.clear_lead * plain : plain >= config_.clear_lead * draft;
    const int64_t every = std::min<int64_t>(int64_t(clear ? 4 : 1) * config_.explore_every << std::min(b.backoff, 16),
                                            std::max(config_.max_every, config_.explore_every));
    const bool visit_on = b.visit_left > 0;
    const bool visit    = visiting(b, every);
    if (visit && !visit_on) { // a visit starts
        b.backoff     = drafting_wins == b.last_choice ? b.backoff + 1 : 0;
        b.last_choice = drafting_wins;
    }
    return visit != drafting_wins;
}

bool DraftingGate::visiting(Batch & b, int64_t every) const {
    if (b.visit_left > 0) {
        --b.visit_left;
        return true;
    }
    if (++b.since_visit < every) return false;
    b.since_visit = 0;
    b.visit_left  = config_.explore_len - 1;
    return true;
}

void DraftingGate::observe(int batch, bool drafted, double tokens, double seconds, int positions) {
    if (batch <= 0 || seconds <= 0.0 || tokens < 0.0 || positions <= 0) return;
    (drafted ? at(batch).draft : at(batch).plain).add(tokens, seconds, positions);
}

} // namespace specd::spec
