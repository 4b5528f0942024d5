#include "spec/ngram_drafter.h"

#include <algorithm>

namespace specd::spec {

std::vector<token_id> NgramDrafter::lookup(std::span<const token_id> history, int k) const {
    const int len = static_cast<int>(history.size());
    if (k <= 0) return {};
    for (int n = std::min(cfg_.max_n, len - 1); n >= cfg_.min_n; --n) {
        const auto suffix = history.last(n);
        // Most recent earlier occurrence first: recent context predicts best. The occurrence
        // must start before the suffix does (they may overlap in a repeating run).
        for (int start = len - n - 1; start >= 0; --start) {
            if (!std::equal(suffix.begin(), suffix.end(), history.begin() + start)) continue;
            const int from = start + n;
            const int take = std::min(k, len - from);
            if (take <= 0) continue;
            return {history.begin() + from, history.begin() + from + take};
        }
    }
    return {};
}

Proposal NgramDrafter::propose(const DraftRequest & req) {
    Proposal p;
    p.tokens = lookup(req.history, req.k);
    for (token_id t : p.tokens) p.dists.push_back(TokenDist::point(t));
    return p;
}

} // namespace specd::spec
