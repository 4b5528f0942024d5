#include "process/runner_host.h"

#include "cache/prompt_cache.h"
#include "core/error.h"
#include "engine/backend.h"
#include "memory/ledger.h"
#include "metrics/registry.h"
#include "process/frame.h"
#include "process/protocol.h"
#include "process/text_batcher.h"
#include "process/wire.h"
#include "scheduler/runner.h"

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <sys/prctl.h>
#include <unistd.h>

namespace specd::process {

namespace {

using nlohmann::json;

// The socket to the server, written by several threads (the runner's, the state publisher,
// the reader). Once a write failed the server is gone: later writes are dropped, and the
// reader sees the end of stream and stops the runner.
class Link {
  public:
    explicit Link(int fd) : fd_(fd) {}

    void send(json head, std::vector<std::string> blobs = {}) {
        std::lock_guard lock(mu_);
        if (broken_) return;
        try {
            write_frame(fd_, Frame{std::move(head), std::move(blobs)});
        } catch (const std::exception & e) {
            broken_ = true;
            std::fprintf(stderr, "specd runner: %s\n", e.what());
        }
    }

    // Sends what `make` builds, under the link's lock: a state and the event after it go out
    // in the order they were made.
    template <class Make> void send_with(Make && make) {
        std::lock_guard lock(mu_);
        if (broken_) return;
        try {
            write_frame(fd_, make());
        } catch (const std::exception & e) {
            broken_ = true;
            std::fprintf(stderr, "specd runner: %s\n", e.what());
        }
    }

  private:
    int        fd_;
    std::mutex mu_;
    bool       broken_ = false;
};

// Test-only: SPECD_TEST_RUNNER_ABORT=<stage>:<model> makes the first runner of that model
// call abort() at a stage (load: while its model loads; prefill: when a job starts; stream:
// after its first piece of text), and load-always makes every runner of it abort while
// loading. This is how the tests show that an abort ends one runner, never the server.
class AbortHook {
  public:
    AbortHook(const RunnerSettings & s) {
        const char * v = std::getenv("SPECD_TEST_RUNNER_ABORT");
        if (!v) return;
        const std::string spec(v);
        const size_t      colon = spec.find(':');
        if (colon == std::string::npos || spec.substr(colon + 1) != s.model) return;
        stage_ = spec.substr(0, colon);
        if (stage_ == "load-always") stage_ = "load";
        else if (stage_ == "start-always") stage_ = "start";
        else if (s.spawn_serial != 1) stage_.clear();
    }

    void at(const char * stage) const {
        if (stage_ != stage) return;
        std::fprintf(stderr, "specd runner: test abort at %s (SPECD_TEST_RUNNER_ABORT)\n", stage);
        std::fflush(stderr);
        std::abort();
    }

  private:
    std::string stage_;
};

// The memory budget's arbiter, asked over the link: the server's scheduler decides (it sees
// every model), and its answer comes back on the reader's thread.
class RemoteArbiter final : public scheduler::LoadArbiter {
  public:
    RemoteArbiter(Link & link, const AbortHook & hook) : link_(link), hook_(hook) {}

    uint64_t make_room(const scheduler::ModelRunner &, uint64_t bytes) override {
        hook_.at("load");
        std::future<json> answer;
        uint64_t          id = 0;
        {
            std::lock_guard lock(mu_);
            id     = ++next_;
            answer = pending_[id].get_future();
        }
        link_.send({{"t", msg::make_room}, {"rid", id}, {"bytes", bytes}});
        const json a = answer.get();
        if (a.value("ok", false)) {
            std::lock_guard lock(mu_);
            device_held_ = a.value("device_held", std::map<std::string, uint64_t>{});
            return a.at("free").get<uint64_t>();
        }
        const int kind = a.value("kind", int(ErrorKind::internal));
        throw Error(kind >= 0 && kind <= int(ErrorKind::internal) ? ErrorKind(kind) : ErrorKind::internal,
                    a.value("message", std::string("no room for the model")));
    }

    void end_load(const scheduler::ModelRunner &) override { link_.send({{"t", msg::end_load}}); }

    std::map<std::string, uint64_t> device_held(const scheduler::ModelRunner &) override {
        std::lock_guard lock(mu_);
        return device_held_;
    }

    // The server's answer to make_room `rid` (reader thread).
    void answer(const json & head) {
        std::lock_guard lock(mu_);
        auto it = pending_.find(head.at("rid").get<uint64_t>());
        if (it == pending_.end()) return;
        it->second.set_value(head);
        pending_.erase(it);
    }

    // The server is gone: a load waiting for room fails instead of waiting forever.
    void abandon() {
        std::lock_guard lock(mu_);
        for (auto & [id, p] : pending_) {
            p.set_value({{"ok", false}, {"kind", int(ErrorKind::busy)}, {"message", "server is shutting down"}});
        }
        pending_.clear();
    }

  private:
    Link &                                link_;
    const AbortHook &                     hook_;
    std::mutex                            mu_;
    uint64_t                              next_ = 0;
    std::map<uint64_t, std::promise<json>> pending_;
    std::map<std::string, uint64_t>        device_held_; // from the last make_room answer
};

// What the server mirrors of this runner: /api/ps's view of the model, the budget's numbers,
// the ledger, the prompt cache's counters and the metrics.
json state_head(const scheduler::Runner & runner, const cache::PromptCache * cache) {
    json state = {{"t", msg::state},
                  {"loaded", nullptr},
                  {"footprint", runner.footprint()},
                  {"idle", runner.idle()},
                  {"last_used_ns", runner.last_used_ns()},
                  {"ledger", ledger_to_json(memory::process_ledger().snapshot())},
                  {"cache", cache ? cache_stats_to_json(cache->stats()) : json(nullptr)},
                  {"metrics", metrics::server_metrics().sample()}};
    if (auto info = runner.loaded()) state["loaded"] = loaded_to_json(*info);
    return state;
}

} // namespace

int serve_runner(int fd) {
    // A server that dies without a word (SIGKILL) takes its runners with it.
    const pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) return 0;
    engine::report_aborts_in_one_line();

    std::optional<Frame> hello = read_frame(fd);
    if (!hello || hello->head.value("t", "") != msg::hello) return 0;
    if (hello->head.value("protocol", 0) != k_protocol_version) {
        std::fprintf(stderr, "specd runner: the server speaks protocol %d, this runner %d\n",
                     hello->head.value("protocol", 0), k_protocol_version);
        return 2;
    }
    const json &   c = hello->head.at("config");
    RunnerSettings s;
    s.model              = c.at("model").get<std::string>();
    s.spawn_serial       = c.at("spawn_serial").get<uint64_t>();
    s.max_queue          = c.at("max_queue").get<size_t>();
    s.keep_alive_ns      = c.at("keep_alive_ns").get<int64_t>();
    s.num_parallel       = c.at("num_parallel").get<int>();
    s.prompt_cache_bytes = c.at("prompt_cache_bytes").get<size_t>();
    s.arbiter            = c.at("arbiter").get<bool>();

    Link            link(fd);
    const AbortHook hook(s);
    RemoteArbiter   arbiter(link, hook);
    link.send({{"t", msg::hello}, {"protocol", k_protocol_version}, {"pid", int64_t(getpid())}});
    hook.at("start");

    std::unique_ptr<cache::PromptCache> cache;
    if (s.prompt_cache_bytes > 0) cache = std::make_unique<cache::PromptCache>(s.prompt_cache_bytes, memory::process_ledger());
    auto runner = std::make_unique<scheduler::Runner>(scheduler::RunnerConfig{
        .max_queue          = s.max_queue,
        .default_keep_alive = KeepAlive(s.keep_alive_ns),
        .cache              = cache.get(),
        .num_parallel       = s.num_parallel,
        .arbiter            = s.arbiter ? &arbiter : nullptr});

    std::mutex                                   jobs_mu;
    std::map<uint64_t, std::shared_ptr<scheduler::Job>> jobs; // by the server's id, until their last event

    // The state goes out a few times a second while it changes, and right before every last
    // event, so that a client holding its answer finds /api/ps and the ledger up to date.
    std::mutex              publish_mu;
    std::condition_variable publish_cv;
    bool                    stopping      = false; // under wake_mu
    bool                    runner_ending = false; // under publish_mu: its destructor runs, nothing reads it
    std::string             last_state;
    const auto publish = [&](bool force) {
        // Made and sent under one lock: a state made earlier never overtakes a later one.
        std::lock_guard lock(publish_mu);
        if (runner_ending) return;
        json        head = state_head(*runner, cache.get());
        std::string text = head.dump();
        if (!force && text == last_state) return;
        last_state = std::move(text);
        link.send(std::move(head));
    };
    std::mutex  wake_mu;
    std::thread publisher([&] {
        std::unique_lock lock(wake_mu);
        while (!stopping) {
            publish_cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping; });
            if (stopping) break;
            lock.unlock();
            publish(false);
            lock.lock();
        }
    });

    for (;;) {
        std::optional<Frame> f;
        try {
            f = read_frame(fd);
        } catch (const std::exception & e) {
            std::fprintf(stderr, "specd runner: %s\n", e.what());
            break;
        }
        if (!f) break;
        const json &      head = f->head;
        const std::string t    = head.value("t", "");
        if (t == msg::job) {
            const uint64_t id  = head.at("id").get<uint64_t>();
            auto           job = std::make_shared<scheduler::Job>();
            job->request       = request_from_json(head.at("request"), f->blobs);
            job->streamed      = head.value("streamed", true);
            job->events.forward([&, id, started_text = false, batch = TextBatcher(job->streamed)](scheduler::Event e) mutable {
                const bool text = e.kind == scheduler::Event::Kind::text;
                // The state goes first at the answer's first text (the request's memory is
                // in the ledger now) and at its end (it is gone): a client sees the server's
                // ledger as it is at each point of its answer.
                if (!text || !started_text) publish(true);
                if (!text) {
                    std::lock_guard lock(jobs_mu);
                    jobs.erase(id);
                }
                for (const scheduler::Event & out : batch.take(std::move(e))) {
                    std::vector<std::string> blobs;
                    json body = event_to_json(out, blobs);
                    link.send({{"t", msg::event}, {"id", id}, {"event", std::move(body)}}, std::move(blobs));
                }
                if (text && !started_text) {
                    started_text = true;
                    hook.at("stream");
                }
            });
            job->on_start = [&link, &hook, id] {
                link.send({{"t", msg::started}, {"id", id}});
                hook.at("prefill");
            };
            {
                std::lock_guard lock(jobs_mu);
                jobs[id] = job;
            }
            if (!runner->enqueue(job)) {
                job->events.push({scheduler::Event::Kind::error,
                                  "server busy, please try again.  maximum pending requests exceeded", ErrorKind::busy, {}});
            }
        } else if (t == msg::cancel) {
            std::lock_guard lock(jobs_mu);
            if (auto it = jobs.find(head.at("id").get<uint64_t>()); it != jobs.end()) it->second->cancel = true;
        } else if (t == msg::room) {
            arbiter.answer(head);
        } else if (t == msg::unload) {
            const bool ok = runner->unload_if_idle();
            publish(true);
            link.send({{"t", msg::unloaded}, {"rid", head.at("rid")}, {"ok", ok}});
        } else if (t == msg::cache_budget) {
            if (cache) cache->set_budget(head.at("bytes").get<size_t>());
        } else if (t == msg::stop) {
            break;
        }
    }
    // The server asked to stop, or is gone: running and queued jobs end with an answer (if
    // anyone still reads), the model unloads, and the process exits.
    arbiter.abandon();
    {
        std::lock_guard lock(wake_mu);
        stopping = true;
    }
    publish_cv.notify_all();
    publisher.join();
    {
        std::lock_guard lock(publish_mu);
        runner_ending = true;
    }
    runner.reset();
    return 0;
}

} // namespace specd::process
