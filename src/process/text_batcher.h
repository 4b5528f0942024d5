#pragma once
// What a runner process sends of a job's events, and when. A client that streams gets every
// piece of text as it comes; a client that reads the whole answer at once (Job::streamed
// false) gets the text in one piece, right before the answer's end. Each message wakes two
// threads of the server (the runner's reader, then the request's), and on a machine whose
// cores all decode, every wake-up delays the decode threads: one message per answer instead of
// one per token.
#include "scheduler/job.h"

#include <optional>
#include <vector>

namespace specd::process {

class TextBatcher {
  public:
    explicit TextBatcher(bool streamed) : streamed_(streamed) {}

    // The events to send now, in order, for the event the job just produced.
    std::vector<scheduler::Event> take(scheduler::Event e);

  private:
    bool                            streamed_;
    std::optional<scheduler::Event> held_; // text not sent yet (not streamed)
};

} // namespace specd::process
