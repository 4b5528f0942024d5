#pragma once
// What proposes draft tokens for the target to verify, and what it is asked. Prompt lookup
// implements Drafter; the draft model answers the same DraftRequest for several sequences at
// once (engine/draft_model: one decode per position for all of them), so the round asks
// prompt lookup first and the session asks the draft model for every round left.
#include "spec/seeded_draw.h"
#include "spec/token_dist.h"

#include <span>
#include <vector>

namespace specd::engine {
class GrammarConstraint;
}

namespace specd::spec {

// What a drafter is asked for.
struct DraftRequest {
    std::span<const token_id>   history;              // every committed token, the last one included
    int                         k          = 0;       // at most this many tokens
    const engine::GrammarConstraint * constraint = nullptr; // the grammar's state after `history`; null: none
    // A drafter that samples (above temperature 0) draws with seeded_draw(q, seed, index):
    // the same noise the target's own draw at that index uses, which couples the two.
    uint64_t                    seed        = 0;
    seq_index                   first_index = 0; // the sequence index of the first drafted token
};

struct Proposal {
    std::vector<token_id>  tokens;
    std::vector<TokenDist> dists; // (tokens): the distribution each token was drawn from

    bool empty() const { return tokens.empty(); }
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Up to `req.k` tokens continuing `req.history`. Fewer or none is a valid answer. A
    // drafter may draft under `req.constraint`; the round cuts every proposal at its first
    // illegal token anyway.
    virtual Proposal propose(const DraftRequest & req) = 0;
};

} // namespace specd::spec
