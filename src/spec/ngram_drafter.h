#pragma once
// Prompt lookup: when the last few tokens occurred earlier in the context, propose what
// followed them then. Costs no model; strong on repetitive, code and JSON output.
#include "spec/drafter.h"

#include <span>
#include <vector>

namespace specd::spec {

struct NgramConfig {
    int min_n = 2; // shortest suffix worth matching (1 proposes too much noise)
    int max_n = 4;
};

class NgramDrafter final : public Drafter {
  public:
    explicit NgramDrafter(NgramConfig cfg = {}) : cfg_(cfg) {}

    // Up to `k` tokens continuing `history`, from the most recent earlier occurrence of its
    // longest matching suffix (n from max_n down to min_n). Empty when nothing matches.
    std::vector<token_id> lookup(std::span<const token_id> history, int k) const;

    // lookup() as point-mass proposals: the drafter is deterministic.
    // Prompt lookup does not read the grammar: its runs are cut by the round.
    Proposal propose(const DraftRequest & req) override;

  private:
    NgramConfig cfg_;
};

} // namespace specd::spec
