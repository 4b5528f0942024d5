#include "scheduler/runner.h"

#include "engine/chat_template.h"
#include "engine/embedder.h"
#include "engine/model.h"
#include "engine/prompt_builder.h"
#include "engine/session.h"
#include "metrics/registry.h"
#include "templates/ollama_prompt.h"

namespace specd::scheduler {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

} // namespace

Runner::Runner(size_t max_queue, KeepAlive default_keep_alive, cache::PromptCache * cache) :
    max_queue_(max_queue), default_keep_alive_(default_keep_alive), cache_(cache), thread_([this] { loop(); }) {}

Runner::~Runner() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        for (auto & job : queue_) job->cancel = true;
        if (current_) current_->cancel = true;
    }
    cv_.notify_all();
    thread_.join();
}

bool Runner::enqueue(std::shared_ptr<Job> job) {
    {
        std::lock_guard lock(mu_);
        if (queue_.size() >= max_queue_ || stopping_) return false;
        job->enqueued_ns = now_ns();
        queue_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
}

std::optional<LoadedInfo> Runner::loaded() const {
    std::lock_guard lock(mu_);
    return info_;
}

void Runner::loop() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(mu_);
            const auto ready = [&] { return stopping_ || !queue_.empty(); };
            if (unload_at_) {
                if (!cv_.wait_until(lock, *unload_at_, ready)) {
                    lock.unlock();
                    unload();
                    continue;
                }
            } else {
                cv_.wait(lock, ready);
            }
            if (stopping_) break;
            job = std::move(queue_.front());
            queue_.pop_front();
            current_ = job;
        }
        run(*job);
        std::lock_guard lock(mu_);
        current_.reset();
    }
    // Jobs still queued at shutdown get an answer rather than a hang.
    for (auto & job : queue_) {
        job->events.push({Event::Kind::error, "server is shutting down", ErrorKind::busy, {}});
    }
    unload();
}

void Runner::ensure_loaded(const GenerateRequest & req, const ContextOptions & context, DoneInfo & done) {
    const engine::ModelLoadOptions load_opts{context.use_mmap};
    const bool same_model = model_ && loaded_digest_ == req.model.digest &&
                            model_->load_options().use_mmap == load_opts.use_mmap;
    if (same_model && session_ && session_->options() == context) return;

    const int64_t t0 = now_ns();
    if (session_) session_->park(); // its sequence may serve a later prompt
    session_.reset();
    embedder_.reset(); // sized like the session: recreated on its next use
    if (!same_model) {
        unload();
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
    }
    // States restore only into the same pair of models (the draft's file is named by digest).
    engine::PromptCacheLink link{cache_, req.model.digest + "+" +
                                             (req.model.draft ? req.model.draft->filename().string() : "")};
    session_   = std::make_unique<engine::Session>(model_, context, draft_, std::move(link));
    done.load_ns += now_ns() - t0;
    account_model();

    LoadedInfo info;
    info.name               = req.model.name;
    info.digest             = req.model.digest;
    info.size_bytes         = model_->size_bytes();
    info.context_length     = session_->n_ctx();
    info.family             = model_->info().architecture;
    info.parameter_size     = engine::format_parameter_count(model_->info().n_params);
    info.quantization_level = model_->info().file_type;
    info.memory_owner       = memory_owner_.owner().id;
    std::lock_guard lock(mu_);
    info_ = info;
}

void Runner::embed(Job & job, DoneInfo & done) {
    const EmbedSpec & spec = *job.request.embed;
    if (!embedder_) {
        embedder_ = std::make_unique<engine::Embedder>(model_, session_->n_ctx(), session_->n_threads());
        account_model();
    }
    const int64_t  t0    = now_ns();
    const uint32_t n_ctx = embedder_->n_ctx();
    std::vector<std::vector<llama_token>> inputs;
    inputs.reserve(spec.inputs.size());
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
        auto tokens = model_->tokenize(spec.inputs[i], /*add_special=*/true, /*parse_special=*/false);
        if (tokens.empty()) throw bad_request("input " + std::to_string(i) + " has no tokens");
        if (tokens.size() > n_ctx) {
            if (!spec.truncate) {
                throw bad_request("input " + std::to_string(i) + " is " + std::to_string(tokens.size()) +
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
}

namespace {

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

void Runner::run(Job & job) {
    // The final event goes out after serve() has released everything the request held, so a
    // client that has its answer sees the request's memory back in the ledger.
    Event last = serve(job);
    job.events.push(std::move(last));
}

Event Runner::serve(Job & job) {
    const GenerateRequest & req = job.request;
    DoneInfo                done;
    memory::OwnerHandle     owner = memory::process_ledger().open_owner(
        memory::OwnerKind::request, "request " + std::to_string(++served_) + " (" + req.model.name + ")");
    memory::Reservation held    = owner.reserve(memory::Bucket::request, request_bytes(req));
    memory::Reservation grammar = owner.reserve(memory::Bucket::grammar, req.generate.grammar.size());
    size_t              image_bytes = 0;
    for (const ImagePtr & image : req.prompt.all_images()) image_bytes += image->rgb().size();
    memory::Reservation images = owner.reserve(memory::Bucket::images, image_bytes);
    try {
        if (job.cancel) throw Error(ErrorKind::cancelled, "request cancelled");
        // A context sized for the largest image seen on this model so far (see below).
        ContextOptions context = req.context;
        context.num_batch      = std::max(context.num_batch, min_batch_);
        ensure_loaded(req, context, done);
        const KeepAlive keep_alive = req.keep_alive.value_or(default_keep_alive_);

        if (req.load_only) {
            done.reason = keep_alive.count() == 0 ? DoneReason::unload : DoneReason::load;
        } else if (req.embed) {
            embed(job, done);
        } else {
            // The request's template wins over the model's TEMPLATE, which wins over the GGUF's.
            std::optional<templates::GoTemplate> request_template;
            if (req.prompt.template_text) request_template = templates::parse_ollama_template(*req.prompt.template_text);
            const templates::GoTemplate * go = request_template ? &*request_template
                                             : go_template_      ? &*go_template_
                                                                 : nullptr;
            auto prompt = engine::build_multimodal_prompt(*model_, *template_, req.prompt, req.model.system,
                                                          projector_.get(), go);
            held.resize(held.bytes() + prompt.tokens.size() * sizeof(llama_token));
            // An image whose tokens attend to each other non-causally must fit one
            // micro-batch (llama.cpp aborts otherwise): grow the batch to the largest image,
            // and keep it that large for this model so that requests do not flip-flop.
            size_t largest = 0;
            for (const auto & image : prompt.images) largest = std::max(largest, image.n_pos);
            if (largest > size_t(session_->batch_capacity()) && largest < size_t(session_->n_ctx())) {
                min_batch_        = std::max(min_batch_, int32_t(largest));
                context.num_batch = std::max(context.num_batch, min_batch_);
                ensure_loaded(req, context, done);
            }
            std::vector<TokenLogprob> logprobs; // handed over just before the text they belong to
            auto result = session_->generate(
                std::move(prompt), req.generate,
                [&](std::string_view text) {
                    job.events.push({Event::Kind::text, std::string(text), {}, {}, std::move(logprobs)});
                    logprobs.clear();
                },
                job.cancel, [&](std::vector<TokenLogprob> lps) { logprobs = std::move(lps); });
            done.reason            = result.reason;
            done.stats             = result.stats;
            done.context = engine::text_tokens(result.context);
            done.speculation    = std::move(result.speculation);
            done.grammar_drafts = result.grammar_drafts;
            done.k_histogram = std::move(result.k_histogram);
            held.resize(held.bytes() + done.context.size() * sizeof(int32_t));
            account_model(); // a first constrained request builds the vocabulary index
        }
        done.total_ns = now_ns() - job.enqueued_ns;

        if (keep_alive.count() == 0) {
            unload();
        } else {
            std::lock_guard lock(mu_);
            if (keep_alive.count() < 0) {
                unload_at_.reset();
                if (info_) info_->expires_at.reset();
            } else {
                unload_at_ = std::chrono::steady_clock::now() + keep_alive;
                if (info_) {
                    info_->expires_at = std::chrono::system_clock::now() +
                                        std::chrono::duration_cast<std::chrono::system_clock::duration>(keep_alive);
                }
            }
        }
        record(done);
        return {Event::Kind::done, {}, {}, std::move(done)};
    } catch (const Error & e) {
        metrics::server_metrics().request_errors_total.add();
        return {Event::Kind::error, e.what(), e.kind(), {}};
    } catch (const std::exception & e) {
        metrics::server_metrics().request_errors_total.add();
        return {Event::Kind::error, e.what(), ErrorKind::internal, {}};
    }
}

} // namespace specd::scheduler
