#pragma once
// Sampling as a pure function of (seed, position, distribution), so that a seed gives one
// text whatever was drafted: Gumbel-max with noise from a counter-based generator keyed by
// (seed, the token's index in the sequence, the token id). The token at index i is
//   argmax over p's candidates v of  log p(v) + g(seed, i, v),   g ~ Gumbel(0, 1),
// which is exactly a draw from p. Verification then accepts a draft where it equals the
// target's own draw at that index; a draft model drawing with the same noise from its own q
// is coupled to the target (it agrees wherever q's winner is p's).
#include "spec/token_dist.h"

#include <cstdint>

namespace specd::spec {

// The index a token has in its sequence (prompt tokens first): the noise key, unchanged by a
// prompt-cache hit, a batch, a context shift or how deep a round drafted.
using seq_index = int64_t;

// g(seed, index, token): a standard Gumbel variate, the same for the same key.
double gumbel_noise(uint64_t seed, seq_index index, token_id token);

// The seeded draw from `p` at `index`. O(candidates); `p` must not be empty.
token_id seeded_draw(const TokenDist & p, uint64_t seed, seq_index index);

} // namespace specd::spec
