#include "spec/draft_charge.h"

#include <algorithm>

namespace specd::spec {

DraftCharge::DraftCharge(double forget) : forget_(std::clamp(forget, 0.0, 1.0)) {}

double DraftCharge::together(int generating) const {
    const size_t i = size_t(std::max(1, generating) - 1);
    if (i >= by_batch_.size() || by_batch_[i].tokens <= 0.0) return 0.0;
    return by_batch_[i].seconds / by_batch_[i].tokens;
}

std::vector<double> DraftCharge::charge(int generating, std::span<const size_t> tokens, double seconds) {
    std::vector<double> out(tokens.size(), 0.0);
    if (tokens.empty()) return out;
    seconds = std::max(0.0, seconds);
    size_t drafted = 0, drafting = 0;
    for (const size_t t : tokens) {
        drafted += t;
        drafting += t > 0 ? 1 : 0;
    }
    if (drafted == 0) { // asked, and nothing came: the time is theirs alike
        std::fill(out.begin(), out.end(), seconds / double(tokens.size()));
        return out;
    }
    const int  batch    = std::max(1, generating);
    const bool all_drafted = int(drafting) >= batch;
    if (all_drafted) {
        const size_t i = size_t(batch - 1);
        if (by_batch_.size() <= i) by_batch_.resize(i + 1);
        Fade & f  = by_batch_[i];
        f.seconds = forget_ * f.seconds + seconds;
        f.tokens  = forget_ * f.tokens + double(drafted);
    }
    const double per_token = all_drafted ? 0.0 : together(batch);
    for (size_t i = 0; i < tokens.size(); ++i) {
        const double share = seconds * double(tokens[i]) / double(drafted);
        out[i]             = per_token > 0.0 ? std::min(share, per_token * double(tokens[i])) : share;
    }
    return out;
}

} // namespace specd::spec
