#pragma once
// Log-probabilities of answer tokens, as plain data: computed by the engine from the target
// model's raw logits (before any sampling filter or temperature), reported by api/.
#include <cstdint>
#include <string>
#include <vector>

namespace specd {

struct TokenLogprobAlt {
    std::string token; // the token's text piece (raw bytes: may be part of a UTF-8 sequence)
    float       logprob = 0.0f;
};

struct TokenLogprob {
    std::string                  token;
    float                        logprob = 0.0f;
    std::vector<TokenLogprobAlt> top; // the most likely tokens at that position, most likely first
};

} // namespace specd
