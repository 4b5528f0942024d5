#pragma once
// Anything that proposes draft tokens for the target to verify: prompt lookup, a draft
// model, and later grammar-forced text or MTP heads. The decode round only sees this.
#include "spec/token_dist.h"

#include <memory>
#include <span>
#include <vector>

namespace specd::grammar {
class Constraint;
}

namespace specd::spec {

struct Proposal {
    std::vector<token_id>  tokens;
    std::vector<TokenDist> dists; // (tokens): the distribution each token was drawn from

    bool empty() const { return tokens.empty(); }
};

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Up to `k` tokens continuing `history` (every committed token, the last one included).
    // Fewer or none is a valid answer. `constraint` is the grammar's state after `history`
    // (null: unconstrained): a drafter may draft under it; the round cuts every proposal at
    // its first illegal token anyway.
    virtual Proposal propose(std::span<const token_id> history, int k, Rng & rng,
                             const grammar::Constraint * constraint) = 0;
};

// Asks its drafters in order; the first non-empty proposal wins (cheap ones go first).
class FirstOfDrafters final : public Drafter {
  public:
    void add(Drafter * d) { drafters_.push_back(d); }
    Proposal propose(std::span<const token_id> history, int k, Rng & rng,
                     const grammar::Constraint * constraint) override {
        for (auto * d : drafters_) {
            if (Proposal p = d->propose(history, k, rng, constraint); !p.empty()) return p;
        }
        return {};
    }

  private:
    std::vector<Drafter *> drafters_;
};

} // namespace specd::spec
