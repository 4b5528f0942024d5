#pragma once
// One request in flight: what to run, a cancel flag, and the channel its results come back on.
#include "core/error.h"
#include "core/logprobs.h"
#include "core/request.h"
#include "engine/generate_result.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace specd::scheduler {

struct DoneInfo {
    engine::GenerateResult          result;     // its context holds text tokens only (no image positions)
    int64_t                         load_ns  = 0;
    int64_t                         total_ns = 0;
    std::vector<std::vector<float>> embeddings; // embed: one pooled vector per input, not normalized
};

struct Event {
    enum class Kind { text, done, error };
    Kind        kind = Kind::text;
    std::string text;                             // text: a piece of the answer; error: message
    ErrorKind   error = ErrorKind::internal;      // error
    DoneInfo    done;                             // done
    std::vector<TokenLogprob> logprobs = {};      // text: the tokens this piece completes, when asked
};

// Single producer (the model's runner), single consumer (the HTTP connection), or, once
// forward() was called, a function that takes each event as it is pushed (a runner process
// sends them to the server that way).
class EventChannel {
  public:
    // Before the first push only.
    void forward(std::function<void(Event)> sink) { sink_ = std::move(sink); }

    void push(Event e) {
        if (sink_) {
            sink_(std::move(e));
            return;
        }
        {
            std::lock_guard lock(mu_);
            events_.push_back(std::move(e));
        }
        cv_.notify_one();
    }

    // The next event, or nothing after `timeout` (so the consumer can check its client).
    template <class Duration> std::optional<Event> pop(Duration timeout) {
        std::unique_lock lock(mu_);
        if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
        Event e = std::move(events_.front());
        events_.pop_front();
        return e;
    }

  private:
    std::mutex                 mu_;
    std::condition_variable    cv_;
    std::deque<Event>          events_;
    std::function<void(Event)> sink_;
};

struct Job {
    GenerateRequest       request;
    // Whether the client reads the answer as it comes. When it does not, a runner in another
    // process sends the text in one piece with the answer's end instead of a message per token:
    // each message wakes two threads of the server, which share the cores with the decode.
    bool                  streamed = true;
    std::atomic<bool>     cancel{false};
    EventChannel          events;
    int64_t               enqueued_ns = 0;
    // Called on the runner's thread when the job leaves the queue to be served (before its
    // model loads): from then on a runner that dies takes the job with it, while a job
    // still queued can go to the next runner.
    std::function<void()> on_start;
};

} // namespace specd::scheduler
