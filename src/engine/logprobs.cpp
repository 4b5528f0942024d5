#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace specd::engine {

PositionLogprobs position_logprobs(std::span<const float> logits, int32_t chosen, int32_t n_top) {
    PositionLogprobs out;
    if (logits.empty()) return out;
    const float max = *std::max_element(logits.begin(), logits.end());
    double      sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - double(max));
    const float log_z = max + float(std::log(sum));
    const auto  lp    = [&](int32_t t) { return logits[size_t(t)] - log_z; };

    out.chosen = chosen >= 0 && size_t(chosen) < logits.size() ? lp(chosen) : -std::numeric_limits<float>::infinity();
    const size_t n = std::min(logits.size(), size_t(std::max(n_top, 0)));
    if (n == 0) return out;
    std::vector<int32_t> ids(logits.size()); // (n_vocab)
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const auto better = [&](int32_t a, int32_t b) {
        return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b;
    };
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), better);
    out.top.reserve(n);
    for (size_t i = 0; i < n; ++i) out.top.emplace_back(ids[i], lp(ids[i]));
    return out;
}

} // namespace specd::engine
