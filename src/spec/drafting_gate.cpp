#include "spec/drafting_gate.h"

#include <algorithm>

namespace specd::spec {

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
    return drafted ? batches_[i].draft.rate() : batches_[i].plain.rate();
}

bool DraftingGate::allow(int batch) {
    Batch & b = at(batch);
    // Until both arms are measured: drafting as planned, with plain steps mixed in (one in
    // four) so that the plain arm fills too; a controller parked at 0 fills it anyway.
    if (b.draft.samples < config_.min_samples || b.plain.samples < config_.min_samples) {
        if (b.plain.samples >= config_.min_samples) return true;
        return ++b.since_visit % 4 != 0;
    }
    const double draft = b.draft.rate(), plain = b.plain.rate();
    const bool   drafting_wins = draft >= (1.0 - config_.margin) * plain;
    if (b.visit_left > 0) {
        --b.visit_left;
        return !drafting_wins;
    }
    // Either arm far ahead: the other is visited 4x less often. A visit of drafting that loses
    // clearly costs its steps and each request's draft catching up, and finds what it found.
    const bool clear = drafting_wins ? draft >= config_.clear_lead * plain : plain >= config_.clear_lead * draft;
    const int  every = clear ? 4 * config_.explore_every : config_.explore_every;
    if (++b.since_visit >= every) {
        b.since_visit = 0;
        b.visit_left  = config_.explore_len - 1;
        return !drafting_wins;
    }
    return drafting_wins;
}

void DraftingGate::observe(int batch, bool drafted, double tokens, double seconds) {
    if (batch <= 0 || seconds <= 0.0 || tokens < 0.0) return;
    Arm & arm   = drafted ? at(batch).draft : at(batch).plain;
    arm.tokens  = config_.forget * arm.tokens + tokens;
    arm.seconds = config_.forget * arm.seconds + seconds;
    arm.samples = std::min(arm.samples + 1, 1 << 20);
}

} // namespace specd::spec
