#include "spec/drafting_gate.h"

#include <algorithm>
#include <cmath>
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

DraftingGate::Arm::Sum DraftingGate::Arm::totals(int last) const {
    Sum sum;
    sum.steps = std::clamp(last, 0, kept());
    for (int n = 1; n <= sum.steps; ++n) {
        const size_t i = size_t((samples - n) % window);
        sum.tokens += tokens[i];
        sum.seconds += seconds[i];
    }
    return sum;
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

double DraftingGate::Batch::lead() const {
    if (readings == 0) return 0.0;
    if (readings == 1) return leads[0];
    return (leads[0] + leads[1]) / 2.0;
}

void DraftingGate::read(Batch & b, double lead, bool alone) {
    if (alone) b.readings = 0;
    b.leads[size_t(b.readings % 2)] = lead;
    ++b.readings;
    const bool was = b.drafting;
    b.drafting     = b.lead() >= 1.0 + (b.drafting ? config_.stop_lead : config_.start_lead);
    b.backoff      = b.drafting == was ? b.backoff + 1 : 0;
    b.chosen_at    = b.chosen().rate(config_.spike);
    if (b.drafting != was) {
        b.run        = 0;   // the steps before were the other arm's
        b.visit_loss = 0.0; // a visit of the other arm is another cost
    }
}

void DraftingGate::read_visit(Batch & b) {
    b.in_visit       = false;
    const Arm &   o  = b.other();
    const int64_t in = std::min<int64_t>(o.samples - b.visit_from, window);
    const bool alone = b.look_now;
    b.look_now       = false;
    if (in <= 0 || b.reference <= 0.0) return; // none of its steps observed (they read prompts too)
    const double visit = o.rate(config_.spike, int(in));
    if (visit <= 0.0) return;
    const Arm::Sum cost = o.totals(int(in)); // what the visit cost, its catching up too
    b.visit_loss        = std::max(0.0, cost.seconds - cost.tokens / b.reference);
    read(b, b.drafting ? b.reference / visit : visit / b.reference, alone);
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
        if (const Batch * n = nearest_decided(batch)) return visiting(b, config_.explore_every, true) != n->drafting;
        // None measured: drafting and plain steps in turn, so that the first reading compares
        // steps of the same stretch of time and of the same lengths of context, also where
        // one arm has steps already (a wave of requests that asked for no drafts: a step of
        // e3_06 at 4 streams took 28 ms at the start of such a wave and 40 at its end, and
        // drafting's first steps read against those last ones led by 15% where it was behind).
        return ++b.since_visit % 2 != 0;
    }
    const int paired = std::min(2 * config_.explore_len, window);
    if (!b.decided) {
        // The first reading: each arm's last steps, which came in turn.
        const int    last  = std::min(config_.min_samples, window);
        const double draft = b.draft.rate(config_.spike, last);
        const double plain = b.plain.rate(config_.spike, last);
        b.decided          = true;
        b.since_visit      = 0;
        b.run              = 0;
        if (plain > 0.0) read(b, draft / plain, true);
        b.backoff = 0;
    } else if (b.in_visit && b.visit_left == 0) {
        read_visit(b); // its last step was observed after the last call
    } else if (!b.in_visit && b.drafting && b.chosen_at > 0.0 &&
               b.draft.rate(config_.spike) < (1.0 - config_.shift) * b.chosen_at) {
        b.look_now = true; // drafting delivers less than at the last reading: plain steps, now
    }
    // Either arm far ahead: the other is visited 4x less often; and the gap doubles with every
    // visit that found the choice as it was.
    const double  lead  = b.lead();
    const bool    clear = b.drafting ? lead >= config_.clear_lead : lead * config_.clear_lead <= 1.0;
    const int64_t most  = std::max(config_.max_every, config_.explore_every);
    int64_t       every = std::min<int64_t>(int64_t(clear ? 4 : 1) * config_.explore_every << std::min(b.backoff, 16), most);
    // And far enough apart that the visits cost at most visit_budget of the steps between.
    if (b.visit_loss > 0.0 && b.step_s > 0.0 && config_.visit_budget > 0.0) {
        const double gap = std::ceil(b.visit_loss / (config_.visit_budget * b.step_s));
        every            = std::max(every, int64_t(std::min(gap, double(most)))); // clamped before the cast
    }
    if (b.look_now) every = 0;
    // A visit is read against the chosen arm's steps right before it: it waits until there
    // are enough of them since the load last changed.
    const bool visit_on = b.visit_left > 0;
    const bool visit    = visiting(b, every, b.run >= paired);
    if (visit && !visit_on && !b.in_visit) { // a visit starts
        b.in_visit   = true;
        b.visit_from = b.other().samples;
        b.reference  = b.chosen().rate(config_.spike, paired);
        const Arm::Sum before = b.chosen().totals(paired);
        b.step_s              = before.seconds / std::max(1, before.steps);
    }
    return visit != b.drafting;
}

bool DraftingGate::visiting(Batch & b, int64_t every, bool ready) const {
    if (b.visit_left > 0) {
        --b.visit_left;
        return true;
    }
    if (b.since_visit <= every + window) ++b.since_visit;
    if (b.since_visit < every) return false;
    // Due: it waits for the steps it is read against, but not for ever (a load whose requests
    // come every few steps would keep the choice unchecked).
    if (!ready && b.since_visit <= every + window) return false;
    b.since_visit = 0;
    b.visit_left  = config_.explore_len - 1;
    return true;
}

void DraftingGate::observe(int batch, bool drafted, double tokens, double seconds, int positions) {
    if (batch <= 0 || seconds <= 0.0 || tokens < 0.0 || positions <= 0) return;
    Batch & b = at(batch);
    if (batch != last_batch_) b.run = 0; // other requests than its last steps'
    last_batch_ = batch;
    (drafted ? b.draft : b.plain).add(tokens, seconds, positions);
    if (b.decided && drafted == b.drafting) ++b.run;
}

void DraftingGate::load_changed() {
    for (Batch & b : batches_) b.run = 0;
    last_batch_ = 0;
}

} // namespace specd::spec
