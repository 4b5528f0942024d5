#pragma once
// What a session's requests have done so far, counted round by round rather than at each
// request's end, so that a dashboard sees a long generation move while it runs. The runner's
// thread writes them; the runner publishes copies for readers on other threads.
#include <cstdint>
#include <vector>

namespace specd::engine {

struct LiveCounters {
    int64_t              generated       = 0; // tokens committed to answers
    int64_t              rounds          = 0; // decode rounds of generating requests
    int64_t              drafted         = 0; // draft tokens verified
    int64_t              accepted        = 0; // of those, accepted
    int64_t              forced          = 0; // grammar-forced tokens verified
    int64_t              forced_accepted = 0; // of those, accepted
    // Decodes of the draft model's or head's context: one per draft position for all the
    // sequences drafting in a step (engine/draft_context.h), so fewer than `drafted` when
    // sequences draft together.
    int64_t              draft_decodes   = 0;
    std::vector<int64_t> depth;               // [k]: rounds that drafted k tokens

    void add_round(int64_t committed, int n_drafted, int n_accepted, int n_forced, int n_forced_accepted);
    // Adds another set (an earlier session's) to this one.
    void add(const LiveCounters & other);
};

} // namespace specd::engine
