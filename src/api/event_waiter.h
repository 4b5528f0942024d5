#pragma once
// Waits for a job's next event on a handler thread, cancelling the job if the client goes
// away meanwhile. The client is checked every k_poll even while events keep coming: an
// answer that is not streamed writes nothing until the end, so only this check notices a
// client that left.
#include "http/request.h"
#include "scheduler/job.h"

#include <chrono>
#include <optional>

namespace specd::api {

inline constexpr auto k_poll = std::chrono::milliseconds(100);

class EventWaiter {
  public:
    EventWaiter(scheduler::Job & job, const http::Request & req);

    // The next event; nullopt when the client left (the job is cancelled).
    std::optional<scheduler::Event> next();

  private:
    scheduler::Job &                      job_;
    const http::Request &                 req_;
    std::chrono::steady_clock::time_point next_check_;
};

} // namespace specd::api
