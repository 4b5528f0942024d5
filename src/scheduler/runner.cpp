#include "scheduler/runner.h"

#include "engine/prompt_builder.h"
#include "engine/session.h"
#include "memory/ledger.h"
#include "metrics/registry.h"
#include "scheduler/model_instance.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace specd::scheduler {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What a request's own data costs while it runs: its texts and token lists.
size_t request_bytes(const GenerateRequest & req) {
    const PromptInput & p = req.prompt;
    size_t n = sizeof(req) + p.prompt.size() + p.system.size() + p.suffix.size() + p.context.size() * sizeof(int32_t);
    for (const Message & m : p.messages) n += sizeof(m) + m.role.size() + m.content.size();
    for (const std::string & stop : req.generate.stop) n += stop.size();
    if (req.embed) {
        for (const std::string & input : req.embed->inputs) n += sizeof(input) + input.size();
    }
    return n;
}

Event error_event(const std::exception_ptr & e) {
    try {
        std::rethrow_exception(e);
    } catch (const Error & err) {
        metrics::server_metrics().request_errors_total.add();
        return {Event::Kind::error, err.what(), err.kind(), {}};
    } catch (const std::exception & err) {
        metrics::server_metrics().request_errors_total.add();
        return {Event::Kind::error, err.what(), ErrorKind::internal, {}};
    }
}

} // namespace

// A job from the moment it is started to its final event: the ledger owner of its memory,
// and what its answer has gathered so far.
struct Runner::Active {
    std::shared_ptr<Job>      job;
    memory::OwnerHandle       owner;
    memory::Reservation       held, grammar, images;
    DoneInfo                  done;
    uint64_t                  seq_run = 0; // the session's id for the generation
    std::vector<TokenLogprob> logprobs;    // handed over just before the text they belong to
    // The text of this step, sent when the step ends: one event per round instead of one per
    // token (a round of a request that drafts commits several), each event a wake-up of the
    // thread that reads it, and in process mode of the server's reader as well.
    std::string               step_text;
    std::vector<TokenLogprob> step_logprobs;

    void send_step_text() {
        if (step_text.empty() && step_logprobs.empty()) return;
        job->events.push({Event::Kind::text, std::exchange(step_text, {}), {}, {}, std::exchange(step_logprobs, {})});
    }

    Active(std::shared_ptr<Job> j, uint64_t serial) : job(std::move(j)) {
        const GenerateRequest & req = job->request;
        owner = memory::process_ledger().open_owner(
            memory::OwnerKind::request, "request " + std::to_string(serial) + " (" + req.model.name + ")");
        held    = owner.reserve(memory::Bucket::request, request_bytes(req));
        grammar = owner.reserve(memory::Bucket::grammar, req.generate.grammar.size());
        size_t image_bytes = 0;
        for (const ImagePtr & image : req.prompt.all_images()) image_bytes += image->rgb().size();
        images = owner.reserve(memory::Bucket::images, image_bytes);
    }
};

Runner::Runner(RunnerConfig cfg) :
    cfg_(cfg), model_(std::make_unique<ModelInstance>(cfg_, *this)), thread_([this] { loop(); }) {}

Runner::~Runner() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        for (auto & job : queue_) job->cancel = true;
        for (auto & job : running_) job->cancel = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool Runner::enqueue(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mu_);
        if (queue_.size() >= cfg_.max_queue || stopping_) return false;
        job->enqueued_ns = now_ns();
        queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
}

std::optional<LoadedInfo> Runner::loaded() const {
    std::lock_guard lock(mu_);
    std::optional<LoadedInfo> info = info_;
    if (info) info->queued = queue_.size();
    return info;
}

bool Runner::idle() const {
    std::lock_guard lock(mu_);
    return info_ && !busy_ && queue_.empty();
}

bool Runner::unload_if_idle() {
    std::unique_lock lock(mu_);
    if (!info_ || busy_ || !queue_.empty() || stopping_) return false;
    unload_requested_ = true;
    cv_.notify_all();
    unloaded_cv_.wait(lock, [&] { return !unload_requested_; });
    return !info_;
}

void Runner::loop() {
    bool blocked = false; // the queue's first job waits for the running generations to end
    for (;;) {
        std::shared_ptr<Job>              job;
        std::vector<std::shared_ptr<Job>> dropped; // cancelled while queued
        bool                              unload_now = false;
        {
            std::unique_lock lock(mu_);
            if (active_.empty()) {
                busy_ = false;
                blocked = false;
                const auto ready = [&] { return stopping_ || !queue_.empty() || unload_requested_; };
                if (unload_at_) {
                    if (!cv_.wait_until(lock, *unload_at_, ready)) {
                        lock.unlock();
                        unload();
                        continue;
                    }
                } else {
                    cv_.wait(lock, ready);
                }
            }
            if (stopping_) break;
            if (unload_requested_) {
                if (active_.empty() && queue_.empty()) unload_now = true;
                else {
                    unload_requested_ = false;
                    unloaded_cv_.notify_all();
                }
            }
            // A client that went away while queued is answered now, not when its turn comes.
            for (auto it = queue_.begin(); it != queue_.end();) {
                if ((*it)->cancel) {
                    dropped.push_back(std::move(*it));
                    it = queue_.erase(it);
                } else {
                    ++it;
                }
            }
            if (!unload_now && !blocked && !queue_.empty()) {
                job = std::move(queue_.front());
                queue_.pop_front();
                busy_ = true;
                running_.push_back(job);
            }
        }
        for (auto & d : dropped) d->events.push({Event::Kind::error, "request cancelled", ErrorKind::cancelled, {}});
        if (unload_now) {
            unload();
            std::lock_guard lock(mu_);
            unload_requested_ = false;
            unloaded_cv_.notify_all();
            continue;
        }
        if (job) {
            if (!admit(job)) {
                std::lock_guard lock(mu_);
                std::erase(running_, job);
                queue_.push_front(std::move(job));
                blocked = true;
            } else if (model_->has_session() && model_->session().can_start()) {
                // Requests that arrived together start together, before the next step.
                std::lock_guard lock(mu_);
                if (!queue_.empty()) continue;
            }
        }
        if (!active_.empty()) {
            const size_t before = active_.size();
            step();
            if (active_.size() < before) blocked = false;
        }
    }
    {
        // A scheduler waiting for this runner to unload is not left waiting.
        std::lock_guard lock(mu_);
        unload_requested_ = false;
    }
    unloaded_cv_.notify_all();
    // Jobs still queued or running at shutdown get an answer rather than a hang.
    for (auto & a : active_) a->job->events.push({Event::Kind::error, "server is shutting down", ErrorKind::busy, {}});
    active_.clear();
    for (auto & job : queue_) {
        job->events.push({Event::Kind::error, "server is shutting down", ErrorKind::busy, {}});
    }
    unload();
}

void Runner::ensure_loaded(const GenerateRequest & req, const ContextOptions & context, DoneInfo & done) {
    // Another model: the one loaded goes first, and /api/ps stops showing it.
    if (model_->needs_load(req, context) && !model_->has_model(req, context)) forget_loaded();
    std::optional<LoadedInfo> info = model_->ensure_loaded(req, context, done);
    if (!info) return;
    info->running = static_cast<int>(active_.size());
    std::lock_guard lock(mu_);
    info_ = std::move(info);
}

void Runner::unload() {
    model_->unload();
    forget_loaded();
}

void Runner::forget_loaded() {
    unload_when_idle_ = false;
    std::lock_guard lock(mu_);
    info_.reset();
    unload_at_.reset();
}

uint64_t Runner::footprint() const { return model_->footprint(); }

namespace {

// How often a running generation's live counters are published (LoadedInfo::live): often
// enough for a chart polled every second, rarely enough to cost nothing next to the steps.
constexpr int64_t k_publish_interval_ns = 250'000'000;

// Adds a finished request to the server-wide totals (/metrics).
void record(const DoneInfo & done) {
    auto & m = metrics::server_metrics();
    const auto & s = done.result.speculation;
    m.requests_total.add();
    m.prompt_tokens_total.add(done.result.stats.prompt_eval_count);
    m.generated_tokens_total.add(done.result.stats.eval_count);
    m.spec_rounds_total.add(s.rounds);
    m.spec_drafted_total.add(s.drafted);
    m.spec_accepted_total.add(s.accepted);
    m.spec_zero_k_rounds_total.add(s.zero_k_rounds);
    m.spec_probes_total.add(s.probes);
    const auto & g = done.result.grammar_drafts;
    m.spec_forced_total.add(g.forced);
    m.spec_forced_accepted_total.add(g.forced_accepted);
    m.spec_grammar_truncated_total.add(g.truncated_tokens);
    m.spec_grammar_truncated_rounds_total.add(g.truncated_rounds);
    m.spec_grammar_no_legal_draft_total.add(g.no_legal_draft);
    for (size_t k = 0; k < done.result.k_histogram.size(); ++k) {
        if (done.result.k_histogram[k] > 0) m.spec_depth.observe(static_cast<double>(k), done.result.k_histogram[k]);
    }
}

} // namespace

bool Runner::admit(const std::shared_ptr<Job> & job) {
    const GenerateRequest & req = job->request;
    // A context sized for the largest image seen on this model so far (see below).
    ContextOptions context = req.context;
    context.num_batch      = std::max(context.num_batch, model_->min_batch());
    // Resolved here, so that a request that leaves use_mmap unset and one that names the
    // default share a session.
    context.use_mmap       = engine::maps_weights(context.use_mmap);
    // Another context means another session: it waits until the running ones have ended.
    if (!active_.empty() && (model_->needs_load(req, context) || !model_->session().can_start())) return false;

    if (job->on_start) job->on_start();
    auto   a    = std::make_unique<Active>(job, ++served_);
    Active & ac = *a;
    try {
        if (job->cancel) throw Error(ErrorKind::cancelled, "request cancelled");
        ensure_loaded(req, context, ac.done);
        if (req.load_only) {
            const KeepAlive keep_alive = req.keep_alive.value_or(cfg_.default_keep_alive);
            ac.done.result.reason = keep_alive.count() == 0 ? DoneReason::unload : DoneReason::load;
        } else if (req.embed) {
            model_->embed(*job, ac.done);
        } else {
            engine::MultimodalPrompt prompt  = model_->build_prompt(req, job->cancel);
            engine::Session &        session = model_->session();
            // An image whose tokens attend to each other non-causally must fit one
            // micro-batch (llama.cpp aborts otherwise): grow the batch to the largest image,
            // and keep it that large for this model so that requests do not flip-flop.
            size_t largest = 0;
            for (const auto & image : prompt.images) largest = std::max(largest, image.n_tokens);
            if (largest > size_t(session.batch_capacity()) && largest < size_t(session.n_ctx())) {
                if (!active_.empty()) return false;
                model_->grow_min_batch(int32_t(largest));
                context.num_batch = std::max(context.num_batch, model_->min_batch());
                ensure_loaded(req, context, ac.done);
            }
            ac.held.resize(ac.held.bytes() + prompt.tokens.size() * sizeof(llama_token));
            ac.seq_run = model_->session().start(
                std::move(prompt), req.generate,
                [&ac](std::string_view text) {
                    ac.step_text += text;
                    ac.step_logprobs.insert(ac.step_logprobs.end(), std::make_move_iterator(ac.logprobs.begin()),
                                            std::make_move_iterator(ac.logprobs.end()));
                    ac.logprobs.clear();
                },
                [&ac](std::vector<TokenLogprob> lps) { ac.logprobs = std::move(lps); }, job->cancel);
            active_.push_back(std::move(a));
            return true;
        }
    } catch (...) {
        // A load that failed half way (weights read, no context) holds memory that neither
        // the ledger nor the scheduler counts: it goes.
        if (model_->half_loaded()) unload();
        finish(ac, error_event(std::current_exception()));
        return true;
    }
    apply_keep_alive(*job);
    ac.done.total_ns = now_ns() - job->enqueued_ns;
    record(ac.done);
    finish(ac, {Event::Kind::done, {}, {}, std::move(ac.done)});
    return true;
}

void Runner::step() {
    engine::Session &                session = model_->session();
    std::vector<engine::SeqFinished> ended   = session.step();
    for (const auto & a : active_) a->send_step_text();
    // Before any answer goes out: a client that reads the dashboard after its answer sees
    // its tokens counted and its sequence no longer running.
    if (!ended.empty() || now_ns() - published_ns_ >= k_publish_interval_ns) {
        publish_live(static_cast<int>(active_.size() - std::min(active_.size(), ended.size())));
    }
    if (const int n = session.last_step_requests(); n > 0) metrics::server_metrics().batch_requests.observe(n);
    for (engine::SeqFinished & f : ended) {
        auto it = std::find_if(active_.begin(), active_.end(), [&](const auto & a) { return a->seq_run == f.id; });
        if (it == active_.end()) continue;
        std::unique_ptr<Active> a = std::move(*it);
        active_.erase(it);
        if (f.error) {
            finish(*a, error_event(f.error));
            continue;
        }
        DoneInfo & done     = a->done;
        done.result         = std::move(f.result);
        done.result.context = engine::text_tokens(done.result.context);
        a->held.resize(a->held.bytes() + done.result.context.size() * sizeof(int32_t));
        model_->account(); // a first constrained request builds the vocabulary index
        apply_keep_alive(*a->job);
        done.total_ns = now_ns() - a->job->enqueued_ns;
        record(done);
        finish(*a, {Event::Kind::done, {}, {}, std::move(done)});
    }
    // The session may change its counts while it serves (a trial of the runner-up count, a
    // recheck after drift): what /api/ps shows follows at each request's end.
    if (!ended.empty()) {
        std::lock_guard lock(mu_);
        if (info_) {
            info_->threads       = session.threads().n_threads;
            info_->threads_batch = session.threads().n_threads_batch;
        }
    }
}

void Runner::publish_live(int running) {
    engine::LiveCounters live = model_->live();
    published_ns_             = now_ns();
    std::lock_guard lock(mu_);
    if (info_) {
        info_->running = running;
        info_->live    = std::move(live);
    }
}

void Runner::apply_keep_alive(const Job & job) {
    const KeepAlive keep_alive = job.request.keep_alive.value_or(cfg_.default_keep_alive);
    unload_when_idle_ = keep_alive.count() == 0;
    std::lock_guard lock(mu_);
    if (keep_alive.count() < 0) {
        unload_at_.reset();
        if (info_) info_->expires_at.reset();
    } else if (keep_alive.count() > 0) {
        unload_at_ = std::chrono::steady_clock::now() + keep_alive;
        if (info_) {
            info_->expires_at = std::chrono::system_clock::now() +
                                std::chrono::duration_cast<std::chrono::system_clock::duration>(keep_alive);
        }
    }
}

void Runner::finish(Active & a, Event last) {
    // keep_alive 0: the model goes before the answer does, unless others still use it.
    if (unload_when_idle_ && active_.empty() && model_->loaded()) unload();
    std::shared_ptr<Job> job = a.job;
    a.held.release();
    a.grammar.release();
    a.images.release();
    a.owner.close();
    last_used_ns_ = now_ns();
    {
        std::lock_guard lock(mu_);
        std::erase(running_, job);
    }
    job->events.push(std::move(last));
}

} // namespace specd::scheduler
