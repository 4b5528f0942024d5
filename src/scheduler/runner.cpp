#include "scheduler/runner.h"

#include "engine/chat_template.h"
#include "engine/embedder.h"
#include "engine/model.h"
#include "engine/prompt_builder.h"
#include "engine/session.h"
#include "metrics/registry.h"
#include "scheduler/load_estimate.h"
#include "templates/ollama_prompt.h"

#include <algorithm>
#include <cstdio>
#include <climits>

namespace specd::scheduler {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The scheduler counts what make_room admitted (a load, an embedding context) as loaded
// until it has ended, either way.
struct LoadAdmission {
    LoadArbiter *  arbiter;
    const Runner & runner;
    ~LoadAdmission() {
        if (arbiter) arbiter->end_load(runner);
    }
};

// What a request's own data costs while it runs: its texts and token lists.
size_t request_bytes(const GenerateRequest & req) {
    const PromptSpec & p = req.prompt;
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

Runner::Runner(RunnerConfig cfg) : cfg_(cfg), thread_([this] { loop(); }) {}

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
            } else if (session_ && session_->can_start()) {
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

bool Runner::has_model(const GenerateRequest & req, const ContextOptions & context) const {
    return model_ && loaded_digest_ == req.model.digest && model_->load_options().use_mmap == engine::maps_weights(context.use_mmap);
}

bool Runner::needs_load(const GenerateRequest & req, const ContextOptions & context) const {
    return !(has_model(req, context) && session_ && session_->options() == context);
}

void Runner::ensure_loaded(const GenerateRequest & req, const ContextOptions & context, DoneInfo & done) {
    if (!needs_load(req, context)) return;
    const engine::ModelLoadOptions load_opts{engine::maps_weights(context.use_mmap), req.model.adapters};
    const bool same_model = has_model(req, context);

    const int64_t t0 = now_ns();
    if (session_) session_->park(); // its sequences may serve a later prompt
    if (session_ && same_model) live_base_.add(session_->live());
    session_.reset();
    embedder_.reset(); // sized like the session: recreated on its next use
    const LoadAdmission admission{cfg_.arbiter, *this};
    const LoadEstimate est = estimate_load(req.model, context);
    if (!same_model) {
        unload();
        // Room first (other models may have to go), then the sequences that fit in it.
        const int want = cfg_.num_parallel > 0 ? cfg_.num_parallel : 1;
        check_context_size(est, want); // before any room is made or weight read
        const uint64_t free = cfg_.arbiter ? cfg_.arbiter->make_room(*this, est.bytes(want)) : UINT64_MAX;
        n_seq_ = cfg_.num_parallel > 0 ? cfg_.num_parallel : default_parallel(est, free);
        model_         = engine::Model::load(req.model.gguf, load_opts);
        draft_         = req.model.draft ? engine::Model::load(*req.model.draft, load_opts) : nullptr;
        const int32_t threads = context.num_thread > 0 ? context.num_thread
                                                       : int32_t(std::max(1u, std::thread::hardware_concurrency()));
        projector_     = req.model.projector ? engine::Projector::load(*req.model.projector, *model_, threads) : nullptr;
        template_      = std::make_unique<engine::ChatTemplate>(model_->get());
        go_template_.reset();
        if (req.model.template_text) go_template_ = templates::parse_ollama_template(*req.model.template_text);
        loaded_digest_ = req.model.digest;
        memory_owner_  = memory::process_ledger().open_owner(memory::OwnerKind::model, req.model.name);
        metrics::server_metrics().model_loads_total.add();
    } else {
        // Another context on the loaded model (a larger num_ctx): its KV must fit too.
        check_context_size(est, n_seq_);
        if (cfg_.arbiter) cfg_.arbiter->make_room(*this, est.bytes(n_seq_));
    }
    // States restore only into the same pair of models (the draft's file is named by digest).
    engine::PromptCacheLink link{cfg_.cache, req.model.digest + "+" +
                                                 (req.model.draft ? req.model.draft->filename().string() : "")};
    session_   = std::make_unique<engine::Session>(model_, context, draft_, std::move(link), n_seq_);
    embedder_bytes_ = est.embedder;
    done.load_ns += now_ns() - t0;
    account_model();
    std::fprintf(stderr, "specd: %s: %s%s\n", req.model.name.c_str(), engine::describe(session_->threads()).c_str(),
                 draft_ ? ("; draft " + engine::describe(session_->draft_threads())).c_str() : "");

    LoadedInfo info;
    info.name               = req.model.name;
    info.digest             = req.model.digest;
    info.size_bytes         = model_->size_bytes();
    info.context_length     = session_->n_ctx();
    info.parallel           = session_->n_seq();
    info.family             = model_->info().architecture;
    info.parameter_size     = engine::format_parameter_count(model_->info().n_params);
    info.quantization_level = model_->info().file_type;
    info.memory_owner       = memory_owner_.owner().id;
    info.threads            = session_->threads().n_threads;
    info.threads_batch      = session_->threads().n_threads_batch;
    info.draft_threads      = draft_ ? session_->draft_threads().n_threads : 0;
    info.running            = static_cast<int>(active_.size());
    info.live               = live_base_;
    std::lock_guard lock(mu_);
    info_ = info;
}

void Runner::embed(Job & job, DoneInfo & done) {
    const EmbedSpec & spec = *job.request.embed;
    if (!embedder_) {
        // A second context on the model, sized by num_ctx: room for it first (a num_ctx that
        // the session takes can need gigabytes here).
        const LoadAdmission admission{cfg_.arbiter, *this};
        if (cfg_.arbiter) cfg_.arbiter->make_room(*this, footprint() + embedder_bytes_);
        embedder_ = std::make_unique<engine::Embedder>(model_, session_->n_ctx(), session_->n_threads());
        account_model();
    }
    const int64_t  t0    = now_ns();
    const uint32_t n_ctx = embedder_->n_ctx();
    std::vector<std::vector<llama_token>> inputs;
    inputs.reserve(spec.inputs.size());
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
        // Only the beginning is kept: a long input is tokenized only that far (engine/prompt_ends.h).
        const std::string name = "input " + std::to_string(i);
        auto [tokens, elided]  = engine::tokenize_ends(*model_, spec.inputs[i], /*add_special=*/true,
                                                       /*parse_special=*/false, {n_ctx + 1, 0}, &job.cancel, name);
        if (tokens.empty()) throw bad_request(name + " has no tokens");
        if (tokens.size() > n_ctx) {
            if (!spec.truncate) {
                throw bad_request(name + " is " + (elided ? "more than " : "") + std::to_string(tokens.size()) +
                                  " tokens, longer than the context length of " + std::to_string(n_ctx) +
                                  " (truncate is false)");
            }
            tokens.resize(n_ctx); // Ollama keeps the beginning
        }
        done.stats.prompt_eval_count += static_cast<int32_t>(tokens.size());
        inputs.push_back(std::move(tokens));
    }
    done.embeddings           = embedder_->embed(inputs, job.cancel);
    account_model(); // the output buffer grows with the largest batch
    done.stats.prompt_count   = done.stats.prompt_eval_count;
    done.stats.prompt_eval_ns = now_ns() - t0;
    done.reason               = DoneReason::stop;
}

void Runner::unload() {
    if (session_) session_->park();
    session_.reset();
    embedder_.reset();
    template_.reset();
    go_template_.reset();
    projector_.reset();
    min_batch_ = 0;
    model_.reset();
    draft_.reset();
    loaded_digest_.clear();
    weights_.release();
    kv_target_.release();
    kv_draft_.release();
    compute_.release();
    vocab_index_.release();
    memory_owner_.close();
    live_base_        = {};
    footprint_        = 0;
    unload_when_idle_ = false;
    std::lock_guard lock(mu_);
    info_.reset();
    unload_at_.reset();
}

void Runner::account_model() {
    const auto set = [&](memory::Reservation & r, memory::Bucket bucket, size_t bytes) {
        if (!r.held()) r = memory_owner_.reserve(bucket, bytes);
        else r.resize(bytes);
    };
    const engine::SessionMemory & mem = session_->memory();
    const engine::ContextBytes    embed = embedder_ ? embedder_->memory() : engine::ContextBytes{};
    set(weights_, memory::Bucket::weights, model_->size_bytes() + (draft_ ? draft_->size_bytes() : 0) +
                                               (projector_ ? projector_->size_bytes() : 0));
    set(kv_target_, memory::Bucket::kv_target, mem.target.kv + embed.kv);
    set(kv_draft_, memory::Bucket::kv_draft, mem.draft.kv);
    set(compute_, memory::Bucket::compute, mem.target.compute + mem.draft.compute + embed.compute);
    // Built by the first constrained request; shared by every later one.
    set(vocab_index_, memory::Bucket::grammar, model_->vocab_index_bytes());
    footprint_ = weights_.bytes() + kv_target_.bytes() + kv_draft_.bytes() + compute_.bytes() + vocab_index_.bytes();
}

namespace {

// How often a running generation's live counters are published (LoadedInfo::live): often
// enough for a chart polled every second, rarely enough to cost nothing next to the steps.
constexpr int64_t k_publish_interval_ns = 250'000'000;

// Adds a finished request to the server-wide totals (/metrics).
void record(const DoneInfo & done) {
    auto & m = metrics::server_metrics();
    const auto & s = done.speculation;
    m.requests_total.add();
    m.prompt_tokens_total.add(done.stats.prompt_eval_count);
    m.generated_tokens_total.add(done.stats.eval_count);
    m.spec_rounds_total.add(s.rounds);
    m.spec_drafted_total.add(s.drafted);
    m.spec_accepted_total.add(s.accepted);
    m.spec_zero_k_rounds_total.add(s.zero_k_rounds);
    m.spec_probes_total.add(s.probes);
    const auto & g = done.grammar_drafts;
    m.spec_forced_total.add(g.forced);
    m.spec_forced_accepted_total.add(g.forced_accepted);
    m.spec_grammar_truncated_total.add(g.truncated_tokens);
    m.spec_grammar_truncated_rounds_total.add(g.truncated_rounds);
    m.spec_grammar_no_legal_draft_total.add(g.no_legal_draft);
    for (size_t k = 0; k < done.k_histogram.size(); ++k) {
        if (done.k_histogram[k] > 0) m.spec_depth.observe(static_cast<double>(k), done.k_histogram[k]);
    }
}

} // namespace

bool Runner::admit(const std::shared_ptr<Job> & job) {
    const GenerateRequest & req = job->request;
    // A context sized for the largest image seen on this model so far (see below).
    ContextOptions context = req.context;
    context.num_batch      = std::max(context.num_batch, min_batch_);
    // Resolved here, so that a request that leaves use_mmap unset and one that names the
    // default share a session.
    context.use_mmap       = engine::maps_weights(context.use_mmap);
    // Another context means another session: it waits until the running ones have ended.
    if (!active_.empty() && (needs_load(req, context) || !session_->can_start())) return false;

    auto   a    = std::make_unique<Active>(job, ++served_);
    Active & ac = *a;
    try {
        if (job->cancel) throw Error(ErrorKind::cancelled, "request cancelled");
        ensure_loaded(req, context, ac.done);
        if (req.load_only) {
            const KeepAlive keep_alive = req.keep_alive.value_or(cfg_.default_keep_alive);
            ac.done.reason = keep_alive.count() == 0 ? DoneReason::unload : DoneReason::load;
        } else if (req.embed) {
            embed(*job, ac.done);
        } else {
            // The request's template wins over the model's TEMPLATE, which wins over the GGUF's.
            std::optional<templates::GoTemplate> request_template;
            if (req.prompt.template_text) request_template = templates::parse_ollama_template(*req.prompt.template_text);
            const templates::GoTemplate * go = request_template ? &*request_template
                                             : go_template_      ? &*go_template_
                                                                 : nullptr;
            // A prompt far over the context is tokenized only at the ends truncation keeps.
            const int32_t                n_ctx = int32_t(session_->n_ctx());
            const engine::PromptReading reading{engine::ends_kept(n_ctx, req.generate.num_keep), &job->cancel, n_ctx};
            auto prompt = engine::build_multimodal_prompt(*model_, *template_, req.prompt, req.model.system,
                                                          projector_.get(), go, reading);
            // An image whose tokens attend to each other non-causally must fit one
            // micro-batch (llama.cpp aborts otherwise): grow the batch to the largest image,
            // and keep it that large for this model so that requests do not flip-flop.
            size_t largest = 0;
            for (const auto & image : prompt.images) largest = std::max(largest, image.n_pos);
            if (largest > size_t(session_->batch_capacity()) && largest < size_t(session_->n_ctx())) {
                if (!active_.empty()) return false;
                min_batch_        = std::max(min_batch_, int32_t(largest));
                context.num_batch = std::max(context.num_batch, min_batch_);
                ensure_loaded(req, context, ac.done);
            }
            ac.held.resize(ac.held.bytes() + prompt.tokens.size() * sizeof(llama_token));
            Job & j    = *job;
            ac.seq_run = session_->start(
                std::move(prompt), req.generate,
                [&j, &ac](std::string_view text) {
                    j.events.push({Event::Kind::text, std::string(text), {}, {}, std::move(ac.logprobs)});
                    ac.logprobs.clear();
                },
                [&ac](std::vector<TokenLogprob> lps) { ac.logprobs = std::move(lps); }, job->cancel);
            active_.push_back(std::move(a));
            return true;
        }
    } catch (...) {
        // A load that failed half way (weights read, no context) holds memory that neither
        // the ledger nor the scheduler counts: it goes.
        if (model_ && !session_) unload();
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
    std::vector<engine::SeqFinished> ended = session_->step();
    // Before any answer goes out: a client that reads the dashboard after its answer sees
    // its tokens counted and its sequence no longer running.
    if (!ended.empty() || now_ns() - published_ns_ >= k_publish_interval_ns) {
        publish_live(static_cast<int>(active_.size() - std::min(active_.size(), ended.size())));
    }
    if (const int n = session_->last_step_requests(); n > 0) metrics::server_metrics().batch_requests.observe(n);
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
        done.reason         = f.result.reason;
        done.stats          = f.result.stats;
        done.context        = engine::text_tokens(f.result.context);
        done.speculation    = std::move(f.result.speculation);
        done.grammar_drafts = f.result.grammar_drafts;
        done.k_histogram    = std::move(f.result.k_histogram);
        a->held.resize(a->held.bytes() + done.context.size() * sizeof(int32_t));
        account_model(); // a first constrained request builds the vocabulary index
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
            info_->threads       = session_->threads().n_threads;
            info_->threads_batch = session_->threads().n_threads_batch;
        }
    }
}

void Runner::publish_live(int running) {
    engine::LiveCounters live = live_base_;
    if (session_) live.add(session_->live());
    published_ns_ = now_ns();
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
    if (unload_when_idle_ && active_.empty() && model_) unload();
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
