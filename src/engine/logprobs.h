#pragma once
// Log-softmax of one position's logits: the chosen token's log-probability and the n most
// likely tokens. O(n_vocab), so the session computes it only when a request asks.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace specd::engine {

struct PositionLogprobs {
    float                                 chosen = 0.0f;
    std::vector<std::pair<int32_t, float>> top; // (n_top) token id, logprob; descending, ties by id
};

PositionLogprobs position_logprobs(std::span<const float> logits, int32_t chosen, int32_t n_top);

} // namespace specd::engine
