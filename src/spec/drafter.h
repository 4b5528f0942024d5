#pragma once
// Anything that proposes draft tokens for the target to verify: prompt lookup, a draft
// model, and later grammar-forced text or MTP heads. The decode round only sees this.
#include "spec/seeded_draw.h"
#include "spec/token_dist.h"

#include <memory>
#include <span>
#include <vector>

namespace specd::grammar {
class Constraint;
}

namespace specd::spec {

// What a drafter is asked for.
struct DraftRequest {
    std::span<const token_id>   history;              // every committed token, the last one included
    int                         k          = 0;       // at most this many tokens
    const grammar::Constraint * constraint = nullptr; // the grammar's state after `history`; null: none
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

// Asks its drafters in order; the first non-empty proposal wins (cheap ones go first).
class FirstOfDrafters final : public Drafter {
  public:
    void add(Drafter * d) { drafters_.push_back(d); }
    Proposal propose(const DraftRequest & req) override {
        for (auto * d : drafters_) {
            if (Proposal p = d->propose(req); !p.empty()) return p;
        }
        return {};
    }

  private:
    std::vector<Drafter *> drafters_;
};

} // namespace specd::spec
