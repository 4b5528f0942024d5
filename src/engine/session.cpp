#include "engine/session.h"

#include "core/error.h"
#include "engine/clock.h"
#include "engine/context_factory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace specd::engine {

namespace {

// A prompt's chunk in a step that also carries other requests' rounds: small enough that the
// running streams keep flowing while a long prompt is read.
constexpr int32_t k_prefill_chunk_streaming = 128;

int32_t clamp_ctx(int32_t requested, int32_t trained) {
    const int32_t n_ctx = effective_num_ctx(requested, trained);
    if (n_ctx < requested) {
        std::fprintf(stderr, "specd: num_ctx %d is above the model's trained context %d; using %d\n",
                     requested, trained, n_ctx);
    }
    return n_ctx;
}

// Rechecking the thread count times decodes after a live sequence's tokens and removes them
// again: only memory that can drop its last positions allows that.
bool can_recheck_threads(const Model & model) {
    const llama_model * m = model.get();
    return !llama_model_is_recurrent(m) && !llama_model_is_hybrid(m) && llama_model_n_swa(m) == 0;
}

size_t truncation_limit(int32_t n_ctx) { return static_cast<size_t>(std::max(n_ctx - 1, 1)); }
size_t truncation_keep(int32_t n_ctx, int32_t num_keep) {
    return std::min(static_cast<size_t>(std::max(num_keep, 0)), truncation_limit(n_ctx) / 2);
}

} // namespace

EndsNeeded ends_kept(int32_t n_ctx, int32_t num_keep) {
    const size_t keep = truncation_keep(n_ctx, num_keep);
    return {keep + 2, truncation_limit(n_ctx) - keep};
}

int32_t batch_tokens(int32_t num_batch, int32_t n_ctx, int n_seq) {
    const int64_t seqs = std::max(n_seq, 1);
    const int64_t most = std::min<int64_t>(num_batch, int64_t(n_ctx) * seqs);
    return int32_t(std::max<int64_t>({1, most, seqs * (1 + k_forced_max + k_spec_max)}));
}

std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep) {
    const size_t limit = truncation_limit(n_ctx);
    if (prompt.size() <= limit) return prompt;
    const size_t keep = truncation_keep(n_ctx, num_keep);
    std::vector<llama_token> out(prompt.begin(), prompt.begin() + keep);
    out.insert(out.end(), prompt.end() - (limit - keep), prompt.end());
    return out;
}

Session::Session(std::shared_ptr<Model> model, const ContextOptions & opts, std::shared_ptr<Model> draft,
                 PromptCacheLink cache, int n_seq) :
    model_(std::move(model)),
    draft_model_(std::move(draft)),
    opts_(opts),
    n_ctx_(static_cast<uint32_t>(clamp_ctx(opts.num_ctx, model_->n_ctx_train()))),
    // Every sequence's round fits one batch: 1 + forced + k tokens each, whatever num_batch says.
    batch_(batch_tokens(opts.num_batch, static_cast<int32_t>(n_ctx_), n_seq), 1),
    speller_(*model_),
    reuse_(std::move(cache)) {
    if (n_seq < 1 || n_seq > k_max_parallel) {
        throw bad_request("parallel sequences must be between 1 and " + std::to_string(k_max_parallel));
    }
    // Until choose_threads() below: all of them, or the user's count.
    const int32_t n_threads = opts.num_thread > 0 ? opts.num_thread : usable_cpus();

    // One KV cache for all sequences; each is held to num_ctx tokens by this class.
    llama_context_params cp = sequences_params(*model_, n_ctx_, n_seq, batch_.capacity());
    cp.n_threads           = n_threads;
    cp.n_threads_batch     = n_threads;
    cp.abort_callback      = abort_step;
    cp.abort_callback_data = this;

    CreatedContext created = create_context(*model_, cp, "cannot create a context of " + std::to_string(cp.n_ctx) + " tokens");
    ctx_           = std::move(created.ctx);
    memory_.target = created.bytes;
    if (draft_model_) {
        const DraftKind kind = draft_kind_of(draft_model_->info().architecture);
        if (is_head(kind)) {
            head_ctx_ = std::make_shared<HeadContext>(draft_model_, kind, *model_, ctx_.get(), n_ctx_, n_seq,
                                                      batch_.capacity());
            memory_.draft = head_ctx_->memory();
        } else {
            draft_ctx_    = std::make_shared<DraftContext>(draft_model_, *model_, n_ctx_, n_seq, batch_.capacity());
            memory_.draft = draft_ctx_->memory();
        }
    } else if (model_->load_options().load_mtp) {
        // No DRAFT: the model drafts with the MTP layer it carries (loaded for that).
        head_ctx_ = std::make_shared<HeadContext>(model_, DraftKind::mtp, *model_, ctx_.get(), n_ctx_, n_seq, batch_.capacity());
        memory_.draft = head_ctx_->memory();
    }
    for (int i = 0; i < n_seq; ++i) {
        auto slot = std::make_unique<SequenceSlot>(KvSequence(ctx_.get(), i));
        if (draft_ctx_) slot->draft = std::make_unique<DraftModel>(draft_ctx_, i);
        if (head_ctx_) slot->head = std::make_unique<HeadDraft>(head_ctx_, i);
        slots_.push_back(std::move(slot));
    }
    env_.emplace(RunEnv{.ctx       = ctx_.get(),
                        .model     = *model_,
                        .batch     = batch_,
                        .n_ctx     = n_ctx_,
                        .num_batch = opts_.num_batch,
                        .speller   = speller_,
                        .prior     = prior_,
                        .acceptance = acceptance_,
                        .steps     = steps_,
                        .live      = live_,
                        .reuse     = reuse_,
                        .eval_image = [this](RequestRun & run, const MultimodalPrompt & prompt,
                                             const ImageSpan & image) { return eval_image(run, prompt, image); }});
    choose_threads();
}

Session::~Session() = default;

// Thread counts by measurement: the target's on its first sequence and the draft's on the
// first draft context, while both hold nothing. num_thread, when set, is the target's count
// and a cap on the draft's. A model measured before (an earlier session) is not timed again.
void Session::choose_threads() {
    const auto measured = [&](Model & model, auto && measure) -> ThreadChoice {
        if (model.size_bytes() < k_unmeasured_model_bytes) return fixed_threads(1);
        if (auto known = model.measured_threads()) return *known;
        const std::vector<int32_t> candidates = thread_candidates(usable_cpus());
        std::optional<ThreadChoice> c = measure(std::span<const int32_t>(candidates));
        if (!c) return fixed_threads(candidates.back());
        model.set_measured_threads(*c);
        return *c;
    };
    const int32_t user = opts_.num_thread;
    if (user > 0) threads_ = fixed_threads(user);
    else {
        threads_ = measured(*model_, [&](std::span<const int32_t> candidates) {
            return calibrate_threads(ctx_.get(), pools_, slots_.front()->kv, 0, candidates);
        });
    }
    pools_.attach(ctx_.get(), threads_.n_threads, threads_.n_threads_batch);
    if (user <= 0) watch_threads();
    if (drift_) next_recheck_ = std::chrono::steady_clock::now() + recheck_gap_;

    if (head_ctx_) {
        // A head's step is one layer or two over the target's cache: it runs on the
        // target's one-token count (not timed on its own: its decodes need the target's rows).
        draft_threads_ = threads_;
        head_ctx_->use_threads(pools_, draft_threads_);
        return;
    }
    if (!draft_model_) return;
    DraftModel & first = *slots_.front()->draft;
    draft_threads_     = measured(*draft_model_, [&](std::span<const int32_t> candidates) {
        return first.measure_threads(pools_, candidates);
    });
    if (user > 0) {
        draft_threads_.n_threads       = std::min(draft_threads_.n_threads, user);
        draft_threads_.n_threads_batch = std::min(draft_threads_.n_threads_batch, user);
    }
    draft_ctx_->use_threads(pools_, draft_threads_);
}

// The target's one-token steps have drifted from what was measured: time the counts again,
// after the tokens of a sequence (no request's KV is touched: the timed tokens are removed).
void Session::recheck_threads() {
    drift_.reset();
    const std::vector<int32_t> candidates = thread_candidates(usable_cpus());
    if (auto c = calibrate_threads(ctx_.get(), pools_, slots_.front()->kv, 0, candidates)) {
        const bool same = c->n_threads == threads_.n_threads && c->n_threads_batch == threads_.n_threads_batch;
        recheck_gap_    = same ? std::min(recheck_gap_ * 2, std::chrono::seconds(1800)) : std::chrono::seconds(30);
        threads_        = *c;
        model_->set_measured_threads(*c);
        std::fprintf(stderr, "specd: a %s model's decode step time drifted; threads now %s\n",
                     model_->info().architecture.c_str(), describe(*c).c_str());
    }
    pools_.attach(ctx_.get(), threads_.n_threads, threads_.n_threads_batch);
    watch_threads();
    next_recheck_ = std::chrono::steady_clock::now() + recheck_gap_;
}

void Session::watch_threads() {
    drift_.reset();
    trial_.reset();
    if (threads_.decode.empty()) return; // not measured: the user's count
    if (can_recheck_threads(*model_)) drift_.emplace(chosen_step_s(threads_));
    if (const int32_t other = runner_up(threads_.decode, threads_.n_threads); other > 0) {
        trial_.emplace(threads_.n_threads, other);
    }
}

int32_t Session::one_token_threads() {
    const int32_t n = trial_ ? trial_->next() : threads_.n_threads;
    if (n != llama_n_threads(ctx_.get())) pools_.attach(ctx_.get(), n, threads_.n_threads_batch);
    return n;
}

void Session::one_token_step(int32_t n_threads, double step_s) {
    if (trial_ && trial_->observe(n_threads, step_s)) {
        threads_.n_threads = trial_->chosen();
        model_->set_measured_threads(threads_);
        if (drift_) drift_.emplace(trial_->recent_s(threads_.n_threads));
        std::fprintf(stderr, "specd: a %s model's one-token steps run faster on %d threads (%.2f ms) than on %d\n",
                     model_->info().architecture.c_str(), trial_->chosen(), trial_->recent_s(trial_->chosen()) * 1e3,
                     trial_->other());
    }
    // One-token steps on the chosen count are what calibration timed: they tell when it no
    // longer holds.
    if (drift_ && n_threads == threads_.n_threads && drift_->observe(step_s) &&
        std::chrono::steady_clock::now() >= next_recheck_) {
        recheck_due_ = true;
    }
}

// llama.cpp asks between micro-batches: a decode stops early only when every request it
// serves has been cancelled (the others still need its result).
bool Session::abort_step(void * data) {
    const auto & runs = static_cast<const Session *>(data)->in_batch_;
    if (runs.empty()) return false;
    return std::all_of(runs.begin(), runs.end(), [](const RequestRun * r) { return r->cancel.load(std::memory_order_relaxed); });
}

int64_t Session::feed_head(const std::vector<RequestRun *> & in_batch) {
    if (!head_ctx_->own_cache()) return 0;
    std::vector<RequestRun *> feeding;
    for (RequestRun * r : in_batch) {
        if (r->feeds_head()) feeding.push_back(r);
    }
    if (feeding.empty()) {
        head_ctx_->after_target_decode(0); // no rows this step: nobody drafts from them
        return 0;
    }
    const int64_t t0 = now_ns();
    head_ctx_->after_target_decode(batch_.size());
    head_ctx_->clear();
    bool ok = true;
    for (RequestRun * r : feeding) {
        // A round's pairs wait for the sequence's next draft, which decodes them with its first
        // tokens; a prompt's wait for its first round (HeadDraft::Pairs).
        const auto how = r->prefilling() ? HeadDraft::Pairs::prompt : HeadDraft::Pairs::round;
        ok = r->slot.head->feed(batch_.get(), r->batch_part().first, r->batch_part().n, how) && ok;
    }
    if (head_ctx_->size() > 0) ok = head_ctx_->decode(/*drafting=*/false) && ok;
    if (!ok) {
        // What it holds of these sequences is unknown now: they start over (drafts get worse
        // for a while, answers do not change).
        for (RequestRun * r : feeding) r->slot.head->forget();
    }
    return now_ns() - t0;
}

void Session::park() {
    for (auto & slot : slots_) {
        if (!slot->busy) reuse_.save(slot->kv, slot->companion());
    }
}

Projector::EvalTimes Session::eval_image(RequestRun & run, const MultimodalPrompt & prompt, const ImageSpan & image) {
    // Attention over an image's tokens may be non-causal: all of them in one micro-batch (the
    // runner sizes the context for the request's largest image; llama.cpp aborts otherwise).
    if (!prompt.projector || image.n_tokens > size_t(batch_.capacity())) {
        throw Error(ErrorKind::internal, "the context cannot hold an image of " + std::to_string(image.n_tokens) +
                                             " tokens in one batch");
    }
    KvSequence &         kv = run.slot.kv;
    Projector::EvalTimes times;
    // The image is decoded on its own, between steps (no batch is decoding now): its
    // decodes stop early for its own request only.
    struct Watch {
        std::vector<RequestRun *> & in_batch;
        ~Watch() { in_batch.clear(); }
    };
    try {
        in_batch_ = {&run};
        Watch watch{in_batch_};
        times = prompt.projector->eval(image, ctx_.get(), kv.id(), kv.next_pos(), batch_.capacity());
    } catch (...) {
        kv.clear();
        if (run.cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        throw;
    }
    kv.appended_image(std::span(prompt.tokens).subspan(image.start, image.n_tokens), llama_pos(image.n_pos));
    return times;
}

SequenceSlot & Session::pick_slot(const MultimodalPrompt & prompt) {
    SequenceSlot * best        = nullptr;
    size_t         best_common = 0;
    for (auto & slot : slots_) {
        if (slot->busy) continue;
        const size_t common = slot->kv.common_prefix(prompt.tokens);
        // The longest shared prefix wins; among equals, the sequence used longest ago.
        if (!best || common > best_common || (common == best_common && slot->last_used < best->last_used)) {
            best        = slot.get();
            best_common = common;
        }
    }
    if (!best) throw Error(ErrorKind::busy, "every sequence of this model is busy");
    return *best;
}

uint64_t Session::start(MultimodalPrompt mm, GenerateOptions opts, TextSink emit, LogprobSink emit_logprobs,
                        const std::atomic<bool> & cancel) {
    std::vector<llama_token> & prompt = mm.tokens;
    const int32_t n_ctx = static_cast<int32_t>(n_ctx_);
    if (prompt.empty()) throw bad_request("prompt is empty after tokenization");
    if (is_image_token(prompt.back())) throw bad_request("a prompt cannot end with an image");
    // An elided prompt (its middle never tokenized) is longer than its tokens.
    const std::string length = (mm.elided ? "more than " : "") + std::to_string(prompt.size());
    if (static_cast<int32_t>(prompt.size()) >= n_ctx || mm.elided) {
        if (!mm.images.empty()) {
            throw bad_request("the prompt with its images is " + length +
                              " tokens, longer than the context length of " + std::to_string(n_ctx) +
                              " tokens (a prompt with images is never truncated)");
        }
        if (!opts.truncate) {
            throw bad_request("the prompt is " + length + " tokens, longer than the context length of " +
                              std::to_string(n_ctx) + " tokens (truncate is false)");
        }
        prompt = truncate_prompt(prompt, n_ctx, opts.num_keep);
    }
    SequenceSlot & slot = pick_slot(mm);
    auto run = std::make_unique<RequestRun>(*env_, slot, ++next_id_, std::move(mm), std::move(opts), std::move(emit),
                                            std::move(emit_logprobs), cancel);
    slot.busy      = true;
    slot.last_used = ++clock_;
    runs_.push_back(std::move(run));
    return next_id_;
}

std::optional<int> Session::batch_depth(int generating) {
    std::vector<std::vector<double>> expected;
    spec::DepthCosts                 mean; // the requests' costs, once summed
    int                              costed = 0;
    for (auto & r : runs_) {
        if (r->ended() || r->prefilling()) continue;
        std::vector<double> e = r->expected_tokens();
        if (e.empty()) continue;
        expected.push_back(std::move(e));
        if (const spec::DepthCosts c = r->depth_costs(); c.t_1 > 0.0) {
            mean.t_1 += c.t_1;
            mean.o += c.o;
            mean.c_d += c.c_d;
            mean.c_v += c.c_v;
            ++costed;
        }
    }
    if (expected.empty()) return std::nullopt;
    if (costed > 0) {
        mean.t_1 /= costed;
        mean.o /= costed;
        mean.c_d /= costed;
        mean.c_v /= costed;
    }
    const double n = generating;
    // A step where every request drafts d: the target's positions, and d draft decodes that
    // cost the batch's drafts what c_d charges each token. Before anything was timed,
    // positions.
    const auto predicted = [&](int d) {
        if (costed == 0) return n * (1.0 + d);
        return mean.t_1 + mean.o + mean.c_v * (n * (1.0 + d) - 1.0) + n * d * mean.c_d;
    };
    return batch_depth_.choose(generating, expected, predicted);
}

void Session::fail_batch(const std::vector<RequestRun *> & in_batch, const std::exception_ptr & why) {
    for (RequestRun * r : in_batch) {
        r->slot.kv.clear();
        r->error = r->cancel.load() ? std::make_exception_ptr(Error(ErrorKind::cancelled, "request cancelled")) : why;
    }
}

std::vector<SeqFinished> Session::step() {
    const auto guarded = [](RequestRun & r, auto && fn) {
        try {
            return fn();
        } catch (...) {
            r.error = std::current_exception();
            return false;
        }
    };
    for (auto & r : runs_) {
        if (!r->ended() && r->cancel.load()) r->error = std::make_exception_ptr(Error(ErrorKind::cancelled, "request cancelled"));
    }
    if (recheck_due_) {
        recheck_due_ = false;
        recheck_threads();
    }

    // 1. Rounds first (each is 1 + forced + drafts tokens), then prompt chunks in the room
    // left: small ones while streams are running, so that those keep flowing. Whether rounds
    // draft when several requests share the step is the gate's call (spec/drafting_gate.h):
    // alone, a request's controller times every cost of its rounds itself; in a batch, what
    // one request's positions cost the others is what its cost model gets wrong.
    const int64_t step_t0   = now_ns();
    const int64_t tokens_t0 = live_.generated;
    int  generating = 0;
    bool gated      = false; // some request generating may draft at its controller's depth
    for (auto & r : runs_) {
        if (r->ended() || r->prefilling()) continue;
        ++generating;
        gated = gated || r->gated();
    }
    // A step that no answer of the gate changes is not one of its visits (its steps still
    // count as plain ones): in a step of requests that all asked for no drafts, a visit of
    // drafting measured nothing, and it took the place of one that would have.
    const bool may_draft = generating < 2 || !gated || gate_.allow(generating);
    const std::optional<int> depth = generating >= 2 && may_draft ? batch_depth(generating) : std::nullopt;
    batch_.clear();
    std::vector<RequestRun *> in_batch;
    // Each open round and the index of its draft model's or head's job (-1: it asks none).
    std::vector<std::pair<RequestRun *, int>> rounds;
    std::vector<DraftJob>                     jobs;
    std::vector<HeadJob>                      head_jobs;
    int32_t                                   room = batch_.capacity();
    for (auto & r : runs_) {
        if (r->ended() || r->prefilling()) continue;
        if (!guarded(*r, [&] { return r->open_round(room, may_draft, depth); })) continue;
        room -= r->round_positions();
        int job = -1;
        if (auto req = r->draft_request()) {
            if (r->slot.head) {
                job = static_cast<int>(head_jobs.size());
                head_jobs.push_back({.head = r->slot.head.get(), .req = *req, .out = {}});
            } else {
                job = static_cast<int>(jobs.size());
                jobs.push_back({.draft = r->slot.draft.get(), .req = *req, .out = {}});
            }
        }
        rounds.emplace_back(r.get(), job);
    }
    // The draft model (or head) drafts for every round that asks it, all together
    // (draft_context.h, head_context.h). A head's catching up after rounds without drafts is
    // left out of the drafts' time: the step pays it (the gate sees it), the drafts' cost per
    // token does not include it.
    std::optional<int64_t> draft_ns = 0;
    if (!jobs.empty() || !head_jobs.empty()) {
        const int64_t t0      = now_ns();
        const int64_t before  = draft_decodes();
        DraftModel::propose_together(jobs);
        const int64_t catch_up = HeadDraft::propose_together(head_jobs);
        draft_ns = now_ns() - t0 - catch_up;
        live_.draft_decodes += draft_decodes() - before;
        // The draft context's first drafting decodes pay its one-time setup: gemma4's
        // assistant of bench/heads.json took 209 ms for its first three drafts and 28 ms for
        // every three after. Timed, that made drafts look 5x dearer for the rest of the
        // request, which parked, and the model's prior carried it to the next ones.
        if (before == 0) draft_ns.reset();
    }
    // What each round is charged for its drafts: its tokens at what they cost when the whole
    // batch drafts (spec/draft_charge.h). [job] for the draft model's jobs, then the head's.
    std::vector<size_t> job_tokens;
    for (const DraftJob & j : jobs) job_tokens.push_back(j.out.tokens.size());
    for (const HeadJob & j : head_jobs) job_tokens.push_back(j.out.tokens.size());
    std::vector<double> charged;
    if (draft_ns && !job_tokens.empty()) {
        charged = charge_.charge(static_cast<int>(rounds.size()), job_tokens, double(*draft_ns) / 1e9);
    }
    for (auto & [r, job] : rounds) {
        spec::Proposal proposal;
        std::optional<int64_t> share = 0;
        if (job >= 0) {
            spec::Proposal & out = r->slot.head ? head_jobs[size_t(job)].out : jobs[size_t(job)].out;
            const size_t     at  = r->slot.head ? jobs.size() + size_t(job) : size_t(job);
            if (charged.empty()) share.reset();
            else share = static_cast<int64_t>(charged[at] * 1e9);
            proposal = std::move(out);
        }
        if (guarded(*r, [&] {
                r->add_round(std::move(proposal), share);
                return true;
            })) {
            in_batch.push_back(r);
        }
    }
    const bool   streaming  = !in_batch.empty();
    const size_t round_runs = in_batch.size();
    // A step whose rounds all drafted the chosen depth is one the choice learns from.
    bool uniform = depth && *depth > 0 && round_runs >= 2;
    for (RequestRun * r : in_batch) uniform = uniform && r->round_depth() == *depth && !r->round_forced();
    for (auto & r : runs_) {
        if (r->ended() || !r->prefilling()) continue;
        int32_t room = batch_.capacity() - batch_.size();
        if (streaming) room = std::min(room, k_prefill_chunk_streaming);
        if (room <= 0) break;
        if (guarded(*r, [&] { return r->add_prefill(room); })) in_batch.push_back(r.get());
    }
    const bool rounds_only = round_runs > 0 && in_batch.size() == round_runs;

    // 2. One decode for all of them.
    last_step_requests_ = batch_.size() > 0 ? static_cast<int>(in_batch.size()) : 0;
    if (batch_.size() > 0) {
        in_batch_           = in_batch;
        const bool    one   = batch_.size() == 1;
        const int32_t n_thr = one ? one_token_threads() : 0;
        const int64_t t0    = now_ns();
        const int32_t rc    = llama_decode(ctx_.get(), batch_.get());
        const int64_t t_dec = now_ns() - t0;
        in_batch_.clear();
        // A one-token step the thread trial ran on its other count times that count, not the
        // model's step (on 2 cores, 1 thread: about twice as long); the rounds learn nothing
        // of costs from it.
        const bool timed = !one || n_thr == threads_.n_threads;
        if (one && rc == 0) one_token_step(n_thr, double(t_dec) / 1e9);
        if (rc != 0) {
            fail_batch(in_batch, std::make_exception_ptr(
                                     Error(ErrorKind::internal, "llama_decode failed (" + std::to_string(rc) + ")")));
        } else {
            // Feeding a head's own cache is part of what this step's rounds cost.
            const int64_t t_feed = head_ctx_ ? feed_head(in_batch) : 0;
            const int64_t t_step = timed ? t_dec + t_feed : 0;
            for (RequestRun * r : in_batch) {
                guarded(*r, [&] {
                    r->after_decode(t_step, static_cast<int>(in_batch.size()), batch_.size());
                    return true;
                });
            }
            acceptance_.end_step();
            // The steps the rounds see (a step of prompt chunks alone is not one of them).
            if (round_runs > 0) steps_.add(batch_.size() - 1, double(t_step) / 1e9);
            if (uniform && rounds_only && timed && draft_ns) {
                batch_depth_.observe(static_cast<int>(round_runs), *depth, double(*draft_ns + t_step) / 1e9);
            }
            // What this step of rounds delivered, drafting or not (a step that also evaluated
            // prompt chunks or images says nothing about the rounds).
            if (rounds_only && round_runs >= 2) {
                bool drafts = false;
                for (RequestRun * r : in_batch) drafts = drafts || r->round_has_drafts();
                gate_.observe(static_cast<int>(round_runs), drafts, double(live_.generated - tokens_t0),
                              double(now_ns() - step_t0) / 1e9, batch_.size());
            } else if (!rounds_only) {
                gate_.load_changed(); // a prompt read: the steps after it are not those before
            }
        }
    }

    // 3. The requests that ended leave; their sequences keep their KV for the next prompt.
    std::vector<SeqFinished> finished;
    for (auto it = runs_.begin(); it != runs_.end();) {
        RequestRun & r = **it;
        if (!r.ended()) {
            ++it;
            continue;
        }
        SeqFinished f;
        f.id = r.id;
        if (r.error) f.error = r.error;
        else {
            try {
                f.result = r.finish();
            } catch (...) {
                f.error = std::current_exception();
            }
        }
        r.slot.busy = false;
        finished.push_back(std::move(f));
        it = runs_.erase(it);
    }
    return finished;
}

} // namespace specd::engine
