#pragma once
// What every request on one target/draft pair has seen of draft acceptance lately, pooled.
//
// A request's DepthController estimates acceptance from its own rounds and forgets them
// fast, to follow the text it is writing. Under load that estimate is noisy where the choice
// is closest: with b requests in a batch a position costs every one of them, the best depth
// drops to 1 or 0, and a few rejections in a row park a request at 0 although its pair
// usually accepts. The requests of one pair share most of their acceptance, and the batch
// sees b times the rounds one request sees: the pool holds them all, fading once per batch
// step, so with one request it spans that request's own horizon and with b requests it holds
// b times the evidence over the same time.
#include <cstdint>

namespace specd::spec {

class AcceptancePool {
  public:
    // `forget` and `forget_idle` per step, like DepthConfig's alpha_forget and
    // alpha_forget_idle per round: by default a step in which no request's drafts were judged
    // keeps the evidence as it is (see alpha_forget_idle).
    explicit AcceptancePool(double forget = 0.9, double forget_idle = 1.0);

    // One round's censored evidence (DepthController::observe's): `accepted` successes, and
    // one failure when the round ended at a rejected draft.
    void add(int accepted, bool rejected);
    // Called once per batch step, after its rounds were added.
    void end_step();

    // The pooled evidence of the steps ended so far.
    double successes() const { return successes_; }
    double failures() const { return failures_; }

  private:
    double forget_;
    double forget_idle_;
    double successes_      = 0.0;
    double failures_       = 0.0;
    double step_successes_ = 0.0; // added since the last end_step()
    double step_failures_  = 0.0;
    bool   judged_         = false;
};

} // namespace specd::spec
