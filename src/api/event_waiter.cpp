#include "api/event_waiter.h"

namespace specd::api {

EventWaiter::EventWaiter(scheduler::Job & job, const http::Request & req) :
    job_(job), req_(req), next_check_(std::chrono::steady_clock::now() + k_poll) {}

std::optional<scheduler::Event> EventWaiter::next() {
    for (;;) {
        auto e = job_.events.pop(k_poll);
        if (std::chrono::steady_clock::now() >= next_check_) {
            next_check_ = std::chrono::steady_clock::now() + k_poll;
            if (req_.client_gone()) {
                job_.cancel = true;
                return std::nullopt;
            }
        }
        if (e) return e;
    }
}

} // namespace specd::api
