#include "process/runner_process.h"

#include "core/error.h"
#include "metrics/registry.h"
#include "process/frame.h"
#include "process/protocol.h"
#include "process/wire.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>

#include <unistd.h>

namespace specd::process {

using nlohmann::json;
using scheduler::Event;

namespace {

// How long a child gets to end its jobs and exit after `stop` before it is killed.
constexpr int k_stop_grace_ms = 10'000;
// How often the supervisor looks for cancelled jobs (a client gone): well inside the ~100 ms
// a cancellation may take.
constexpr auto k_supervise_interval = std::chrono::milliseconds(20);

bool is_last(const Event & e) { return e.kind != Event::Kind::text; }

} // namespace

// One spawned child: its process, the threads reading its socket and its stderr, and what it
// last said.
struct RunnerProcess::Child {
    ChildProcess        proc;
    uint64_t            serial = 0;
    std::mutex          write_mu;
    bool                write_failed = false;  // under write_mu
    std::atomic<bool>   ended{false};          // its socket reached end of stream
    bool                loading      = false;  // between make_room and end_load (under mu_)
    size_t              cache_budget = 0;      // the share of the prompt cache it was given (under mu_)
    std::vector<double> metrics;               // its last metrics sample (reader thread only)
    bool                reported     = false;  // it sent a state (under mu_)
    memory::PromptCacheStats cache{};          // its last prompt cache counters (under mu_)
    std::mutex          log_mu;
    std::string         last_log;              // its last line on stderr (under log_mu)
    std::thread         reader, log_reader;

    void send(json head, std::vector<std::string> blobs = {}) {
        std::lock_guard lock(write_mu);
        if (write_failed) return;
        try {
            write_frame(proc.socket(), Frame{std::move(head), std::move(blobs)});
        } catch (const std::exception &) {
            write_failed = true; // the reader sees its end of stream and reports the death
        }
    }

    std::string log_line() {
        std::lock_guard lock(log_mu);
        return last_log;
    }
};

RunnerProcess::RunnerProcess(std::string model, scheduler::RunnerConfig cfg, RunnerProcessSettings settings) :
    model_(std::move(model)), cfg_(cfg), settings_(std::move(settings)), mirror_(memory::process_ledger()),
    supervisor_([this] { supervise(); }) {}

RunnerProcess::~RunnerProcess() {
    std::unique_lock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    lock.unlock();
    supervisor_.join();
    lock.lock();
    if (child_) stop_child(lock);
    fail_jobs("server is shutting down", ErrorKind::busy, false);
}

bool RunnerProcess::enqueue(std::shared_ptr<scheduler::Job> job) {
    std::unique_lock lock(mu_);
    if (stopping_) return false;
    if (failed_ && failed_->first != job->request.model.digest) failed_.reset(); // created again
    if (failed_) {
        job->events.push({Event::Kind::error, failed_->second, ErrorKind::internal, {}});
        return true;
    }
    const size_t queued = std::count_if(jobs_.begin(), jobs_.end(), [](const auto & p) { return !p.second.started; });
    if (queued >= cfg_.max_queue) return false;
    const uint64_t id = ++next_id_;
    jobs_.emplace(id, Pending{job});
    try {
        ensure_child(lock);
        send_job(*child_, id, *job);
    } catch (const std::exception & e) {
        jobs_.erase(id);
        job->events.push({Event::Kind::error, e.what(), ErrorKind::internal, {}});
    }
    return true;
}

std::optional<scheduler::LoadedInfo> RunnerProcess::loaded() const {
    std::lock_guard lock(mu_);
    std::optional<scheduler::LoadedInfo> info = info_;
    if (info) info->queued = std::count_if(jobs_.begin(), jobs_.end(), [](const auto & p) { return !p.second.started; });
    return info;
}

bool RunnerProcess::idle() const {
    // All of the child's work is ours: with no job pending it has none. (Its own idle flag
    // comes with its next state, up to 100 ms late, when the next model may already ask
    // for room.)
    std::lock_guard lock(mu_);
    return info_ && jobs_.empty();
}

bool RunnerProcess::unload_if_idle() {
    std::unique_lock lock(mu_);
    if (!child_ || !info_ || !jobs_.empty() || stopping_) return false;
    Child &        c   = *child_;
    const uint64_t rid = ++next_rid_;
    c.send({{"t", msg::unload}, {"rid", rid}});
    cv_.wait(lock, [&] { return unload_answers_.count(rid) || child_.get() != &c || c.ended; });
    const auto it = unload_answers_.find(rid);
    const bool ok = it != unload_answers_.end() && it->second;
    if (it != unload_answers_.end()) unload_answers_.erase(it);
    if (!ok) return child_.get() != &c; // it died meanwhile: nothing is loaded any more
    // Unloaded: the process ends, so that its memory goes back to the system. A job that
    // arrived meanwhile keeps it (it loads the model again).
    if (jobs_.empty() && child_.get() == &c) stop_child(lock);
    return true;
}

memory::PromptCacheStats RunnerProcess::cache_stats() const {
    std::lock_guard          lock(mu_);
    memory::PromptCacheStats s = cache_ended_;
    const memory::PromptCacheStats & l = cache_live_;
    s.budget_bytes = settings_.cache->total();
    s.bytes        = l.bytes;
    s.entries      = l.entries;
    s.tokens       = l.tokens;
    s.hits += l.hits;
    s.misses += l.misses;
    s.tokens_reused += l.tokens_reused;
    s.evictions += l.evictions;
    s.stores += l.stores;
    s.rejected += l.rejected;
    return s;
}

void RunnerProcess::ensure_child(std::unique_lock<std::mutex> &) {
    if (child_) return;
    auto c    = std::make_unique<Child>();
    c->proc   = ChildProcess::spawn(settings_.exe);
    c->serial = ++spawns_;
    settings_.cache->started();
    c->cache_budget = settings_.cache->total() > 0 ? settings_.cache->share() : 0;
    c->send({{"t", msg::hello},
             {"protocol", k_protocol_version},
             {"config",
              {{"model", model_},
               {"spawn_serial", c->serial},
               {"max_queue", cfg_.max_queue},
               {"keep_alive_ns", int64_t(cfg_.default_keep_alive.count())},
               {"num_parallel", cfg_.num_parallel},
               {"prompt_cache_bytes", c->cache_budget},
               {"arbiter", cfg_.arbiter != nullptr}}}});
    std::fprintf(stderr, "specd: runner %llu of model '%s' started (pid %d)\n", static_cast<unsigned long long>(c->serial),
                 model_.c_str(), int(c->proc.pid()));
    Child * raw   = c.get();
    c->reader     = std::thread([this, raw] { read_frames(*raw); });
    c->log_reader = std::thread([this, raw] { read_log(*raw); });
    child_        = std::move(c);
}

void RunnerProcess::send_job(Child & c, uint64_t id, const scheduler::Job & job) {
    std::vector<std::string> blobs;
    json request = request_to_json(job.request, blobs);
    c.send({{"t", msg::job}, {"id", id}, {"request", std::move(request)}, {"streamed", job.streamed}}, std::move(blobs));
}

void RunnerProcess::read_frames(Child & c) {
    for (;;) {
        std::optional<Frame> f;
        try {
            f = read_frame(c.proc.socket());
        } catch (const std::exception & e) {
            std::fprintf(stderr, "[runner %s] %s\n", model_.c_str(), e.what());
        }
        if (!f) break;
        try {
            dispatch(c, f->head, f->blobs);
        } catch (const std::exception & e) {
            // A frame we cannot read is a broken runner: it is ended like a dead one.
            std::fprintf(stderr, "[runner %s] unreadable message: %s\n", model_.c_str(), e.what());
            ::kill(c.proc.pid(), SIGKILL);
            break;
        }
    }
    c.ended = true;
    std::lock_guard lock(mu_);
    cv_.notify_all();
}

void RunnerProcess::read_log(Child & c) {
    // The runner's stderr (its SPECD_DEBUG lines, llama.cpp's messages, an abort's last words)
    // goes to the server's, each line with the model's name.
    std::string pending;
    char        buf[4096];
    for (;;) {
        const ssize_t n = ::read(c.proc.stderr_fd(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        pending.append(buf, size_t(n));
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
            std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            std::fprintf(stderr, "[runner %s] %s\n", model_.c_str(), line.c_str());
            if (!line.empty()) {
                std::lock_guard lock(c.log_mu);
                c.last_log = std::move(line);
            }
        }
    }
    if (!pending.empty()) {
        std::fprintf(stderr, "[runner %s] %s\n", model_.c_str(), pending.c_str());
        std::lock_guard lock(c.log_mu);
        c.last_log = std::move(pending);
    }
}

void RunnerProcess::dispatch(Child & c, const json & head, const std::vector<std::string> & blobs) {
    const std::string t = head.at("t").get<std::string>();
    if (t == msg::event) {
        Event          e  = event_from_json(head.at("event"), blobs);
        const uint64_t id = head.at("id").get<uint64_t>();
        const bool                      last = is_last(e);
        std::shared_ptr<scheduler::Job> job;
        {
            std::lock_guard lock(mu_);
            const auto it = jobs_.find(id);
            if (it == jobs_.end()) return;
            job = it->second.job;
            if (last) jobs_.erase(it);
        }
        job->events.push(std::move(e));
        if (last) {
            std::lock_guard lock(mu_);
            cv_.notify_all();
        }
    } else if (t == msg::state) {
        apply_state(c, head);
    } else if (t == msg::started) {
        std::lock_guard lock(mu_);
        if (auto it = jobs_.find(head.at("id").get<uint64_t>()); it != jobs_.end()) it->second.started = true;
    } else if (t == msg::make_room) {
        answer_make_room(c, head);
    } else if (t == msg::end_load) {
        {
            std::lock_guard lock(mu_);
            c.loading = false;
        }
        if (cfg_.arbiter) cfg_.arbiter->end_load(*this);
    } else if (t == msg::unloaded) {
        std::lock_guard lock(mu_);
        unload_answers_[head.at("rid").get<uint64_t>()] = head.at("ok").get<bool>();
        cv_.notify_all();
    } else if (t == msg::hello) {
        if (head.at("protocol").get<int>() != k_protocol_version) throw std::runtime_error("another protocol version");
    } else {
        throw std::runtime_error("unknown message \"" + t + "\"");
    }
}

void RunnerProcess::apply_state(Child & c, const json & head) {
    // Metrics count the work of every child, also one that is stopping.
    std::vector<double> sample = head.at("metrics").get<std::vector<double>>();
    metrics::server_metrics().add_difference(sample, c.metrics);
    c.metrics = std::move(sample);

    std::optional<scheduler::LoadedInfo> info;
    if (!head.at("loaded").is_null()) info = loaded_from_json(head.at("loaded"));
    const memory::LedgerSnapshot ledger = ledger_from_json(head.at("ledger"));
    std::lock_guard              lock(mu_);
    if (!head.at("cache").is_null()) c.cache = cache_stats_from_json(head.at("cache"));
    c.reported = true;
    if (child_.get() != &c) return; // a child being stopped: its memory is the mirror's no more
    mirror_.apply(ledger);
    cache_live_ = c.cache;
    if (info) {
        info->memory_owner = mirror_.server_owner(info->memory_owner);
        load_deaths_       = 0;
    }
    info_        = std::move(info);
    footprint_   = head.at("footprint").get<uint64_t>();
    last_used_ns_ = head.at("last_used_ns").get<int64_t>();
    cv_.notify_all();
}

void RunnerProcess::answer_make_room(Child & c, const json & head) {
    // On the reader's thread: the child's runner waits for this answer and sends nothing else
    // meanwhile (a load starts only when no generation runs).
    json answer = {{"t", msg::room}, {"rid", head.at("rid")}};
    try {
        {
            std::lock_guard lock(mu_);
            c.loading = true;
        }
        const uint64_t bytes = head.at("bytes").get<uint64_t>();
        answer["free"]       = cfg_.arbiter ? cfg_.arbiter->make_room(*this, bytes) : UINT64_MAX;
        answer["device_held"] = cfg_.arbiter ? json(cfg_.arbiter->device_held(*this)) : json::object();
        answer["ok"]         = true;
    } catch (const Error & e) {
        answer["ok"]      = false;
        answer["kind"]    = int(e.kind());
        answer["message"] = e.what();
    } catch (const std::exception & e) {
        answer["ok"]      = false;
        answer["kind"]    = int(ErrorKind::internal);
        answer["message"] = e.what();
    }
    c.send(std::move(answer));
}

void RunnerProcess::supervise() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
        cv_.wait_for(lock, k_supervise_interval);
        if (stopping_) break;
        if (child_ && child_->ended) {
            on_death(lock);
            continue;
        }
        if (!child_) continue;
        // Runners started or ended elsewhere: this one's share of the prompt cache follows.
        if (const size_t share = settings_.cache->share(); child_->cache_budget > 0 && share != child_->cache_budget) {
            child_->cache_budget = share;
            child_->send({{"t", msg::cache_budget}, {"bytes", share}});
        }
        // A client that went away: its job is cancelled in the child.
        for (auto & [id, p] : jobs_) {
            if (p.job->cancel && !p.cancel_sent) {
                p.cancel_sent = true;
                child_->send({{"t", msg::cancel}, {"id", id}});
            }
        }
        // The child's runner unloaded its model (keep_alive ran out, or 0) and has nothing to
        // do (all its work is ours: no job pending): the process ends, so its memory goes back
        // to the system.
        if (jobs_.empty() && !info_ && child_->reported && !child_->loading) {
            stop_child(lock);
        }
    }
}

void RunnerProcess::on_death(std::unique_lock<std::mutex> & lock) {
    std::unique_ptr<Child> c = std::move(child_);
    // A runner that never sent its state died starting (a broken build, a library that will
    // not load): that counts as dying while loading too, or its jobs would start runner
    // after runner without end.
    const bool             while_loading = c->loading || !c->reported ||
                                           (!info_ && std::any_of(jobs_.begin(), jobs_.end(),
                                                                  [](const auto & p) { return p.second.started; }));
    lock.unlock();
    std::optional<int> status = c->proc.wait(2000);
    if (!status) status = c->proc.kill_and_wait(); // its socket closed, yet it lives on: it goes
    if (c->reader.joinable()) c->reader.join();
    if (c->log_reader.joinable()) c->log_reader.join();
    if (cfg_.arbiter && c->loading) cfg_.arbiter->end_load(*this);
    lock.lock();

    std::string message = "the runner of model '" + model_ + "' stopped unexpectedly (" + describe_exit(*status) + ")";
    if (const std::string last = c->log_line(); !last.empty()) message += "; its last log line: " + last;
    std::fprintf(stderr, "specd: %s\n", message.c_str());
    retire(*c);
    const std::string digest = jobs_.empty() ? std::string() : jobs_.begin()->second.job->request.model.digest;
    fail_jobs(message, ErrorKind::internal, true);
    if (while_loading && ++load_deaths_ >= 2) {
        // The same model killed two runners in a row while loading: a third would too.
        failed_ = {digest, "model '" + model_ + "' cannot be loaded: " + message +
                               ", twice in a row; create the model again or restart the server to retry"};
        fail_jobs(failed_->second, ErrorKind::internal, false);
        return;
    }
    if (jobs_.empty() || stopping_) return;
    // The jobs still queued go to a fresh runner, in their order.
    try {
        ensure_child(lock);
        for (auto & [id, p] : jobs_) send_job(*child_, id, *p.job);
    } catch (const std::exception & e) {
        fail_jobs(e.what(), ErrorKind::internal, false);
    }
}

void RunnerProcess::stop_child(std::unique_lock<std::mutex> & lock) {
    std::unique_ptr<Child> c = std::move(child_);
    c->send({{"t", msg::stop}});
    lock.unlock();
    if (!c->proc.wait(k_stop_grace_ms)) c->proc.kill_and_wait();
    if (c->reader.joinable()) c->reader.join();
    if (c->log_reader.joinable()) c->log_reader.join();
    if (cfg_.arbiter && c->loading) cfg_.arbiter->end_load(*this);
    lock.lock();
    retire(*c);
}

void RunnerProcess::retire(const Child & c) {
    settings_.cache->ended();
    // Its prompt cache's counters stay counted; what it held is gone with it.
    cache_ended_.hits += c.cache.hits;
    cache_ended_.misses += c.cache.misses;
    cache_ended_.tokens_reused += c.cache.tokens_reused;
    cache_ended_.evictions += c.cache.evictions;
    cache_ended_.stores += c.cache.stores;
    cache_ended_.rejected += c.cache.rejected;
    mirror_.clear();
    info_.reset();
    cache_live_  = {};
    footprint_   = 0;
    cv_.notify_all();
}

void RunnerProcess::fail_jobs(const std::string & message, ErrorKind kind, bool started_only) {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (started_only && !it->second.started) {
            ++it;
            continue;
        }
        metrics::server_metrics().request_errors_total.add();
        it->second.job->events.push({Event::Kind::error, message, kind, {}});
        it = jobs_.erase(it);
    }
}

scheduler::RunnerFactory RunnerProcesses::factory() {
    return [this](const std::string & model, const scheduler::RunnerConfig & cfg) {
        auto r = std::make_shared<RunnerProcess>(model, cfg, settings_);
        std::lock_guard lock(mu_);
        runners_.push_back(r);
        return r;
    };
}

memory::PromptCacheStats RunnerProcesses::cache_stats() const {
    memory::PromptCacheStats total{};
    total.budget_bytes = settings_.cache->total(); // shared by the runners' caches
    std::lock_guard          lock(mu_);
    for (const auto & w : runners_) {
        const auto r = w.lock();
        if (!r) continue;
        const memory::PromptCacheStats s = r->cache_stats();
        total.bytes += s.bytes;
        total.entries += s.entries;
        total.tokens += s.tokens;
        total.hits += s.hits;
        total.misses += s.misses;
        total.tokens_reused += s.tokens_reused;
        total.evictions += s.evictions;
        total.stores += s.stores;
        total.rejected += s.rejected;
    }
    return total;
}

} // namespace specd::process
