#include "spec/batch_depth.h"

#include <algorithm>
#include <array>
#include <cstdlib>

namespace specd::spec {

BatchDepth::BatchDepth(BatchDepthConfig config) : config_(config) {
    config_.max_depth     = std::max(1, config_.max_depth);
    config_.explore_every = std::max(1, config_.explore_every);
    config_.explore_len   = std::max(1, config_.explore_len);
    config_.explore_new   = std::max(1, config_.explore_new);
}

BatchDepth::Batch & BatchDepth::at(int batch) {
    const size_t i = size_t(std::max(1, batch) - 1);
    if (batches_.size() <= i) batches_.resize(i + 1);
    return batches_[i];
}

double BatchDepth::seconds(int batch, int depth) const {
    const size_t i = size_t(std::max(1, batch) - 1);
    if (i >= batches_.size() || depth < 0 || size_t(depth) >= batches_[i].depth.size()) return 0.0;
    const Timed & t = batches_[i].depth[size_t(depth)];
    return t.w >= config_.min_weight ? t.mean() : 0.0;
}

int BatchDepth::choose(int batch, const std::vector<std::vector<double>> & expected,
                       const std::function<double(int)> & predicted) {
    int top = 0;
    for (const auto & e : expected) top = std::max(top, int(e.size()) - 1);
    top = std::min(top, config_.max_depth);
    if (top < 1) return 0;
    Batch & b = at(batch);
    if (b.depth.size() <= size_t(top)) b.depth.resize(size_t(top) + 1);

    const auto measured = [&](int d) { return b.depth[size_t(d)].w >= config_.min_weight; };
    // Nothing timed at this batch size: the cost model has not been checked against these
    // steps, and on a fresh server it is far off (bench/eagle3.json's e3_06 at 4 streams: it
    // chose depths 2-4, 73-118 ms a step, where depth 1 then took 45-50). Depth 1 is the
    // cheapest to time, and its time then scales every other depth's prediction.
    bool timed = false;
    for (int d = 1; d <= top; ++d) timed = timed || measured(d);
    if (!timed) return 1;
    // A depth not timed yet: the prediction, scaled as the nearest timed depth's measurement
    // compares with its prediction (the shallower one at equal distance).
    const auto step_seconds = [&](int d) {
        if (measured(d)) return b.depth[size_t(d)].mean();
        int near = -1;
        for (int m = 1; m <= top; ++m) {
            if (measured(m) && (near < 0 || std::abs(m - d) < std::abs(near - d))) near = m;
        }
        double scale = 1.0;
        if (near > 0) {
            if (const double p = predicted(near); p > 0.0) scale = b.depth[size_t(near)].mean() / p;
        }
        return predicted(d) * scale;
    };
    std::vector<double> rates(size_t(top) + 1, -1.0);
    int                 best = 1;
    for (int d = 1; d <= top; ++d) {
        double tokens = 0.0;
        for (const auto & e : expected) {
            if (!e.empty()) tokens += e[size_t(std::min(d, int(e.size()) - 1))];
        }
        const double s = step_seconds(d);
        if (s > 0.0) rates[size_t(d)] = tokens / s;
        if (rates[size_t(d)] > rates[size_t(best)]) best = d;
    }
    for (int d = 1; d < best; ++d) {
        if (rates[size_t(d)] >= (1.0 - config_.prefer_shallow) * rates[size_t(best)]) {
            best = d;
            break;
        }
    }
    if (b.visit_left > 0) {
        --b.visit_left;
        return std::clamp(b.visit_depth, 1, top);
    }
    // The neighbours in the order of this visit (they take turns), those out of range left
    // out; one with no time yet goes first and comes sooner.
    std::vector<int> next;
    for (int d : b.visit_up ? std::array{best + 1, best - 1} : std::array{best - 1, best + 1}) {
        if (d >= 1 && d <= top) next.push_back(d);
    }
    if (next.empty()) return best;
    if (next.size() == 2 && measured(next[0]) && !measured(next[1])) std::swap(next[0], next[1]);
    const bool untimed = !measured(next[0]);
    if (++b.since_visit < (untimed ? config_.explore_new : config_.explore_every)) return best;
    b.since_visit = 0;
    b.visit_up    = !b.visit_up;
    b.visit_depth = next[0];
    // A depth never stepped needs a step more: its first is not counted.
    b.visit_left  = config_.explore_len - 1 + (b.depth[size_t(next[0])].stepped ? 0 : 1);
    return next[0];
}

void BatchDepth::observe(int batch, int depth, double seconds) {
    if (batch < 1 || depth < 1 || depth > config_.max_depth || seconds <= 0.0) return;
    Batch & b = at(batch);
    if (b.depth.size() <= size_t(depth)) b.depth.resize(size_t(depth) + 1);
    Timed & t = b.depth[size_t(depth)];
    if (!t.stepped) {
        t.stepped = true;
        return;
    }
    // The machine stalls now and then; one stalled step counted in full would move a depth's
    // time by a third.
    if (t.w >= config_.min_weight) seconds = std::min(seconds, config_.spike * t.mean());
    t.s = t.s * config_.forget + seconds;
    t.w = t.w * config_.forget + 1.0;
}

} // namespace specd::spec
