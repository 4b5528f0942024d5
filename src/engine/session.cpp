#include "engine/session.h"

#include "core/error.h"
#include "engine/context_factory.h"
#include "engine/sampler.h"
#include "engine/seq_state.h"
#include "spec/ngram_drafter.h"
#include "spec/verifier.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>

namespace specd::engine {

namespace {

constexpr int k_spec_max = 16; // deepest speculation round (the controller's k_max)
// Grammar-forced text proposed per round, at most: in tokens and in bytes of text.
constexpr int    k_forced_max       = 16;
constexpr size_t k_forced_max_bytes = 64;
// The prompt cache. A live sequence is saved when at least this many of its tokens are about
// to be lost: a chat that goes on re-tokenizes the end of the last answer a little
// differently, and copying the whole state for those few tokens would be waste.
constexpr size_t k_save_min_lost = 32;
// A saved state is restored when it holds at least this many more prompt tokens than the
// live KV: below that, evaluating them costs about as much as the copy.
constexpr size_t k_restore_min_gain = 16;
// A prompt's chunk in a step that also carries other requests' rounds: small enough that the
// running streams keep flowing while a long prompt is read.
constexpr int32_t k_prefill_chunk_streaming = 128;

// An image is evaluated whole: a prefix that ends inside one is cut back to its start.
size_t image_boundary(const MultimodalPrompt & prompt, size_t n) {
    for (const ImageSpan & span : prompt.images) {
        if (span.start < n && n < span.start + span.n_pos) return span.start;
    }
    return n;
}

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

int32_t clamp_ctx(int32_t requested, int32_t trained) {
    if (trained > 0 && requested > trained) {
        std::fprintf(stderr, "specd: num_ctx %d is above the model's trained context %d; using %d\n",
                     requested, trained, trained);
        return trained;
    }
    return requested;
}

// Rechecking the thread count times decodes after a live sequence's tokens and removes them
// again: only memory that can drop its last positions allows that.
bool can_recheck_threads(const Model & model) {
    const llama_model * m = model.get();
    return !llama_model_is_recurrent(m) && !llama_model_is_hybrid(m) && llama_model_n_swa(m) == 0;
}

} // namespace

std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep) {
    const size_t limit = static_cast<size_t>(std::max(n_ctx - 1, 1));
    if (prompt.size() <= limit) return prompt;
    const size_t keep = std::min(static_cast<size_t>(std::max(num_keep, 0)), limit / 2);
    std::vector<llama_token> out(prompt.begin(), prompt.begin() + keep);
    out.insert(out.end(), prompt.end() - (limit - keep), prompt.end());
    return out;
}


struct Session::Slot {
    llama_seq_id                seq = 0;
    std::vector<llama_token>    cached; // tokens whose KV is in this sequence, in order
    std::unique_ptr<DraftModel> draft;
    spec::NgramDrafter          ngram;
    spec::FirstOfDrafters       drafters; // prompt lookup first (free), then the draft model
    uint64_t                    last_used = 0;
    bool                        busy      = false;
};

// One request on one sequence: its prompt is read in chunks, then each round proposes
// forced text and drafts after its last token, and verifies them in the step's batch.
class Session::Run {
  public:
    Run(Session & s, Slot & slot, uint64_t id, MultimodalPrompt prompt, GenerateOptions opts, TextSink emit,
        LogprobSink emit_logprobs, const std::atomic<bool> & cancel) :
        id(id), slot(slot), cancel(cancel), s_(s), mm_(std::move(prompt)), opts_(std::move(opts)),
        emit_(std::move(emit)), emit_logprobs_(std::move(emit_logprobs)),
        sampler_(*s.model_, opts_.sampling, opts_.grammar), rng_(make_rng(opts_.sampling.seed)),
        depth_(s.prior_, draft_cap(opts_), spec::DepthConfig{.k_max = k_spec_max}),
        out_(*s.model_, opts_, emit_, emit_logprobs_) {
        const std::vector<llama_token> & prompt_tokens = mm_.tokens;
        const size_t history = std::min(prompt_tokens.size(), size_t(std::max(opts_.sampling.repeat_last_n, 0)));
        // Penalties look at the prompt's text tokens; image positions have no token id.
        std::vector<llama_token> recent;
        for (llama_token t : std::span(prompt_tokens).last(history)) {
            if (!is_image_token(t)) recent.push_back(t);
        }
        sampler_.accept_history(recent);
        if (slot.draft) slot.draft->begin_request(opts_.sampling, &cancel);
        const int32_t n_ctx = int32_t(s.n_ctx_);
        n_keep_    = std::clamp(opts_.num_keep, 0, n_ctx / 2);
        can_shift_ = opts_.shift && opts_.num_predict != -2 && llama_memory_can_shift(llama_get_memory(s.ctx_.get()));
    }

    const uint64_t            id;
    Slot &                    slot;
    const std::atomic<bool> & cancel;
    std::exception_ptr        error;

    bool prefilling() const { return phase_ == Phase::prefill; }
    bool ended() const { return phase_ == Phase::ended || error; }

    // Adds up to `room` prompt tokens to the batch (images are evaluated on their own, right
    // away); true when it added any.
    bool add_prefill(int32_t room) {
        Batch & batch = s_.batch_;
        if (!prefill_started_) begin_prefill();
        const std::vector<llama_token> & tokens = mm_.tokens;
        const int32_t chunk = std::max(1, std::min({s_.opts_.num_batch, batch.capacity(), room}));
        int32_t added = 0;
        while (pos_ < tokens.size() && added < chunk) {
            if (next_image_ < mm_.images.size() && pos_ == mm_.images[next_image_].start) {
                if (added > 0) break; // the image goes after this chunk's text is decoded
                const ImageSpan & image = mm_.images[next_image_++];
                const auto        times = s_.eval_image(*this, mm_, image);
                result_.stats.image_count += 1;
                result_.stats.image_tokens += static_cast<int32_t>(image.n_pos);
                result_.stats.image_encode_ns += times.encode_ns;
                result_.stats.image_decode_ns += times.decode_ns;
                pos_ += image.n_pos;
                continue;
            }
            const size_t end = next_image_ < mm_.images.size() ? mm_.images[next_image_].start : tokens.size();
            for (; pos_ < end && added < chunk; ++pos_, ++added) {
                const bool last = pos_ + 1 == tokens.size();
                const int32_t idx = batch.add(tokens[pos_], static_cast<llama_pos>(pos_), slot.seq, last);
                if (last) logits_idx_ = idx;
            }
        }
        return added > 0;
    }

    // Plans this round and adds the last token, forced tokens and drafts to the batch; false
    // when the answer ended before the round (the context is full and cannot shift).
    bool add_round() {
        const int32_t n_ctx = int32_t(s_.n_ctx_);
        if (static_cast<int32_t>(slot.cached.size()) + 1 > n_ctx) {
            if (!can_shift_) {
                out_.end(DoneReason::length);
                phase_ = Phase::ended;
                return false;
            }
            s_.shift_context(slot, n_keep_);
        }
        // 1-2. Plan and draft. First the text the grammar forces from here (free: no model
        // ran to find it), as much of it as the controller finds worth verifying; then the
        // depth k of prompt lookup or the draft model under the grammar's state after that
        // text. The context, num_predict and the batch bound both. Every proposed token is
        // verified by the target below like any draft.
        Batch &       batch  = s_.batch_;
        const int     room   = n_ctx - static_cast<int>(slot.cached.size()) - 1;
        const int     budget = std::min({room, out_.remaining() - 1, batch.capacity() - batch.size() - 1});
        const int64_t td0    = now_ns();
        drafts_.clear();
        dists_.clear();
        n_forced_ = 0;
        forced_   = {};
        grammar_round_ns_ = 0;
        std::optional<grammar::Constraint> after_forced;
        const grammar::Constraint *        state = sampler_.constraint();
        const bool look_for_forced = state && budget > 0 &&
                                     (opts_.draft_fixed_k ? *opts_.draft_fixed_k > 0 : depth_.wants_forced());
        if (look_for_forced) {
            forced_ = s_.forced_tokens(*state, last_, std::min(budget, k_forced_max));
            const int use = opts_.draft_fixed_k ? static_cast<int>(forced_.tokens.size())
                                                : depth_.plan_forced(static_cast<int>(forced_.tokens.size()));
            forced_.tokens.resize(size_t(use));
            drafts_   = forced_.tokens;
            n_forced_ = static_cast<int>(drafts_.size());
            for (llama_token t : drafts_) dists_.push_back(spec::TokenDist::point(t));
            if (n_forced_ > 0) {
                after_forced.emplace(state->clone());
                for (llama_token t : drafts_) after_forced->accept(t);
                state = &*after_forced;
            }
            grammar_round_ns_ += now_ns() - td0;
        }
        const int planned = opts_.draft_fixed_k ? *opts_.draft_fixed_k : depth_.plan(n_forced_);
        k_                = std::min(planned, budget - n_forced_);
        if (k_ > 0) {
            history_.assign(slot.cached.begin(), slot.cached.end());
            history_.push_back(last_);
            history_.insert(history_.end(), drafts_.begin(), drafts_.end());
            spec::Proposal proposal = slot.drafters.propose(history_, k_, rng_, state);
            if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
            // Under a grammar a draft is cut at its first illegal token: verifying it would
            // only cost positions the target is sure to reject.
            const int64_t tg0 = now_ns();
            // Prompt lookup copies what followed a match in the history, image positions
            // included: those are no tokens to propose.
            const auto image_at = std::find_if(proposal.tokens.begin(), proposal.tokens.end(), is_image_token);
            proposal.tokens.erase(image_at, proposal.tokens.end());
            proposal.dists.resize(proposal.tokens.size());
            const size_t legal = state ? state->legal_prefix(proposal.tokens) : proposal.tokens.size();
            if (state) grammar_round_ns_ += now_ns() - tg0;
            if (legal < proposal.tokens.size()) {
                auto & g = result_.grammar_drafts;
                if (legal == 0) ++g.no_legal_draft;
                else ++g.truncated_rounds;
                g.truncated_tokens += static_cast<int64_t>(proposal.tokens.size() - legal);
            }
            drafts_.insert(drafts_.end(), proposal.tokens.begin(), proposal.tokens.begin() + legal);
            dists_.insert(dists_.end(), std::make_move_iterator(proposal.dists.begin()),
                          std::make_move_iterator(proposal.dists.begin() + legal));
        }
        n_drafted_  = static_cast<int>(drafts_.size()) - n_forced_;
        draft_ns_   = now_ns() - td0;

        // 3. The last token plus the forced tokens and drafts, logits for all:
        // (1 + n_forced + n_drafted) positions starting at P = cached.size().
        pos0_       = static_cast<llama_pos>(slot.cached.size());
        logits_idx_ = batch.add(last_, pos0_, slot.seq, true);
        for (size_t i = 0; i < drafts_.size(); ++i) batch.add(drafts_[i], pos0_ + 1 + static_cast<llama_pos>(i), slot.seq, true);
        return true;
    }

    // Reads this run's logits after the step's decode (`decode_ns` long, shared by
    // `batch_runs` requests).
    void after_decode(int64_t decode_ns, int batch_runs) {
        if (prefilling()) after_prefill_chunk();
        else after_round(decode_ns, batch_runs);
    }

    // Releases held-back text and completes the result.
    GenerateResult finish() {
        out_.finish();
        result_.reason        = out_.reason();
        result_.stats.eval_count = out_.eval_count();
        result_.stats.eval_ns = t1_ > 0 ? now_ns() - t1_ : 0;
        result_.grammar_drafts.grammar_ns += sampler_.grammar_ns();
        result_.speculation   = depth_.stats();
        result_.context       = mm_.tokens;
        result_.context.insert(result_.context.end(), out_.tokens().begin(), out_.tokens().end());
        depth_.fold_into(s_.prior_);
        return std::move(result_);
    }

  private:
    enum class Phase { prefill, generate, ended };

    static std::optional<int> draft_cap(const GenerateOptions & opts) {
        if (opts.draft_num_predict >= 0) return std::min<int>(opts.draft_num_predict, k_spec_max);
        return std::nullopt;
    }

    // Makes the slot's KV hold the longest usable prefix of the prompt (its own, or a saved
    // state's), and drops the rest.
    void begin_prefill() {
        prefill_started_ = true;
        t0_              = now_ns();
        const std::vector<llama_token> & tokens = mm_.tokens;
        std::vector<llama_token> &       cached = slot.cached;
        size_t common = 0;
        while (common < cached.size() && common < tokens.size() && cached[common] == tokens[common]) ++common;
        common = s_.reuse_saved(slot, mm_, image_boundary(mm_, common));
        if (common == tokens.size()) --common; // the last prompt token must be decoded for its logits
        llama_memory_t mem = llama_get_memory(s_.ctx_.get());
        if (!llama_memory_seq_rm(mem, slot.seq, static_cast<llama_pos>(common), -1)) {
            llama_memory_seq_rm(mem, slot.seq, -1, -1);
            common = 0;
        }
        cached.resize(common);
        pos_         = common;
        prompt_kept_ = common;
        while (next_image_ < mm_.images.size() && mm_.images[next_image_].start < common) ++next_image_;
    }

    void after_prefill_chunk() {
        const std::vector<llama_token> & tokens = mm_.tokens;
        slot.cached.insert(slot.cached.end(), tokens.begin() + static_cast<std::ptrdiff_t>(slot.cached.size()),
                           tokens.begin() + static_cast<std::ptrdiff_t>(pos_));
        if (pos_ < tokens.size()) return;
        result_.stats.prompt_eval_count = static_cast<int32_t>(tokens.size() - prompt_kept_);
        result_.stats.prompt_count      = static_cast<int32_t>(tokens.size());
        t1_                             = now_ns();
        result_.stats.prompt_eval_ns    = t1_ - t0_;
        // The first token comes from the prompt's logits; every later one from a round.
        phase_ = Phase::generate;
        last_  = choose(sampler_.distribution(s_.ctx_.get(), logits_idx_));
        sampler_.accept(last_);
        if (out_.commit(last_, s_.ctx_.get(), logits_idx_)) phase_ = Phase::ended;
    }

    void after_round(int64_t decode_ns, int batch_runs) {
        slot.cached.push_back(last_);
        // 4. Verify position by position; the chain state always matches what is committed.
        llama_context *  ctx         = s_.ctx_.get();
        int              n_accepted  = 0;
        llama_token      next        = -1;
        bool             done        = false;
        std::string_view forced_rest = forced_.text; // what is still forced at position i < n_forced
        for (size_t i = 0; i <= drafts_.size(); ++i) {
            const int32_t         idx = logits_idx_ + static_cast<int32_t>(i);
            const spec::TokenDist p   = sampler_.distribution(ctx, idx);
            bool                  accepted = false;
            if (i < drafts_.size()) {
                const auto v = sampler_.greedy() ? spec::verify_greedy(drafts_[i], p.ids[0])
                                                 : spec::verify_stochastic(drafts_[i], p, dists_[i], rng_);
                accepted = v.accepted;
                next     = v.token;
            } else {
                next = choose(p);
            }
            sampler_.accept(next);
            if (i < size_t(n_forced_)) {
                s_.speller_.learn(i == 0 ? last_ : drafts_[i - 1], forced_rest, next);
                forced_rest.remove_prefix(std::min(forced_rest.size(), s_.model_->token_piece(next).size()));
            }
            done = out_.commit(next, ctx, idx);
            if (!accepted || done) break;
            ++n_accepted;
            slot.cached.push_back(next); // an accepted draft's KV is already in the cache
        }

        // 5. Roll back what was not accepted; `next` is the new last token (not decoded yet).
        llama_memory_seq_rm(llama_get_memory(ctx), slot.seq, pos0_ + 1 + n_accepted, -1);
        last_ = next;
        if (done) phase_ = Phase::ended;
        if (result_.k_histogram.size() <= size_t(n_drafted_)) result_.k_histogram.resize(size_t(n_drafted_) + 1);
        ++result_.k_histogram[size_t(n_drafted_)];
        result_.grammar_drafts.forced += n_forced_;
        result_.grammar_drafts.grammar_ns += grammar_round_ns_;
        result_.grammar_drafts.forced_accepted += std::min(n_accepted, n_forced_);
        // The drafts were judged only if the forced run ahead of them was accepted in full.
        const bool judged = n_accepted >= n_forced_;
        depth_.observe({.k_planned         = std::max(k_, 0),
                        .n_drafted         = n_drafted_,
                        .n_accepted        = judged ? n_accepted - n_forced_ : 0,
                        .n_forced          = n_forced_,
                        .n_forced_accepted = std::min(n_accepted, n_forced_),
                        .drafts_judged     = judged,
                        .draft_s           = draft_ns_ / 1e9,
                        .verify_s          = decode_ns / 1e9,
                        .batch_size        = batch_runs});
    }

    llama_token choose(const spec::TokenDist & p) {
        return sampler_.greedy() ? p.ids[0] : p.draw(spec::uniform01(rng_));
    }

    Session &        s_;
    MultimodalPrompt mm_;
    GenerateOptions  opts_;
    TextSink         emit_;
    LogprobSink      emit_logprobs_;
    GenerateResult   result_;
    Sampler          sampler_;
    spec::Rng        rng_;
    spec::DepthController depth_;
    GenerationOutput out_;
    Phase            phase_ = Phase::prefill;
    int32_t          n_keep_    = 0;
    bool             can_shift_ = false;
    int64_t          t0_ = 0, t1_ = 0;

    // Prefill.
    bool    prefill_started_ = false;
    size_t  pos_             = 0; // the next prompt position to evaluate
    size_t  prompt_kept_     = 0; // prompt positions whose KV was reused
    size_t  next_image_      = 0;

    // The round in the step's batch.
    llama_token                  last_ = -1; // committed, not decoded yet
    llama_pos                    pos0_ = 0;
    int32_t                      logits_idx_ = -1; // the batch index of `last_` (prefill: of the prompt's last token)
    std::vector<llama_token>     drafts_; // (n_forced + n_drafted)
    std::vector<spec::TokenDist> dists_;  // (n_forced + n_drafted): what each was drawn from
    int                          n_forced_  = 0;
    int                          n_drafted_ = 0;
    int                          k_         = 0;
    Forced                       forced_;
    int64_t                      grammar_round_ns_ = 0;
    int64_t                      draft_ns_         = 0;
    std::vector<llama_token>     history_;
};

Session::Session(std::shared_ptr<Model> model, const ContextOptions & opts, std::shared_ptr<Model> draft,
                 PromptCacheLink cache, int n_seq) :
    model_(std::move(model)),
    draft_model_(std::move(draft)),
    opts_(opts),
    n_ctx_(static_cast<uint32_t>(clamp_ctx(opts.num_ctx, model_->n_ctx_train()))),
    // Every sequence's round fits one batch: 1 + forced + k tokens each, whatever num_batch says.
    batch_(std::max({1, std::min(opts.num_batch, static_cast<int32_t>(n_ctx_) * std::max(n_seq, 1)),
                     std::max(n_seq, 1) * (1 + k_forced_max + k_spec_max)}),
           1),
    speller_(*model_),
    cache_(std::move(cache)) {
    if (n_seq < 1 || n_seq > k_max_parallel) {
        throw bad_request("parallel sequences must be between 1 and " + std::to_string(k_max_parallel));
    }
    // Until choose_threads() below: all of them, or the user's count.
    const int32_t n_threads = opts.num_thread > 0 ? opts.num_thread : usable_cpus();

    // One KV cache for all sequences (llama.cpp's unified KV): a batch may then mix a long
    // prompt chunk with single-token rounds in one micro-batch. Each sequence is held to
    // num_ctx tokens by this class, so the cache is num_ctx per sequence, as Ollama sizes it.
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx               = n_ctx_ * uint32_t(n_seq);
    cp.n_batch             = batch_.capacity();
    cp.n_ubatch            = batch_.capacity();
    cp.n_seq_max           = uint32_t(n_seq);
    cp.kv_unified          = true;
    cp.n_threads           = n_threads;
    cp.n_threads_batch     = n_threads;
    cp.abort_callback      = abort_step;
    cp.abort_callback_data = this;

    CreatedContext created = create_context(*model_, cp, "cannot create a context of " + std::to_string(cp.n_ctx) + " tokens");
    ctx_           = std::move(created.ctx);
    memory_.target = created.bytes;
    for (int i = 0; i < n_seq; ++i) {
        auto slot = std::make_unique<Slot>();
        slot->seq = i;
        if (draft_model_) {
            slot->draft = std::make_unique<DraftModel>(draft_model_, *model_, n_ctx_, batch_.capacity());
            memory_.draft.kv += slot->draft->memory().kv;
            memory_.draft.compute += slot->draft->memory().compute;
        }
        slot->drafters.add(&slot->ngram);
        if (slot->draft) slot->drafters.add(slot->draft.get());
        slots_.push_back(std::move(slot));
    }
    choose_threads();
}

// Thread counts by measurement: the target's on its first sequence and the draft's on the
// first draft context, while both hold nothing. num_thread, when set, is the target's count
// and a cap on the draft's. A model measured before (an earlier session) is not timed again.
void Session::choose_threads() {
    const auto measured = [&](Model & model, auto && measure) -> ThreadChoice {
        if (model.size_bytes() < k_unmeasured_model_bytes) return {.n_threads = 1, .n_threads_batch = 1};
        if (auto known = model.measured_threads()) return *known;
        const std::vector<int32_t> candidates = thread_candidates(usable_cpus());
        std::optional<ThreadChoice> c = measure(std::span<const int32_t>(candidates));
        if (!c) return {.n_threads = candidates.front(), .n_threads_batch = candidates.front()};
        model.set_measured_threads(*c);
        return *c;
    };
    const int32_t user = opts_.num_thread;
    if (user > 0) threads_ = {.n_threads = user, .n_threads_batch = user};
    else {
        threads_ = measured(*model_, [&](std::span<const int32_t> candidates) {
            return calibrate_threads(ctx_.get(), pools_, 0, 0, 0, candidates);
        });
    }
    pools_.attach(ctx_.get(), threads_.n_threads, threads_.n_threads_batch);
    if (user <= 0 && !threads_.decode.empty() && can_recheck_threads(*model_)) {
        drift_.emplace(chosen_step_s(threads_));
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
    for (auto & slot : slots_) slot->draft->use_threads(pools_, draft_threads_);
}

// The target's one-token steps have drifted from what was measured: time the counts again,
// after the tokens of a sequence (no request's KV is touched: the timed tokens are removed).
void Session::recheck_threads() {
    drift_.reset();
    Slot & slot = *slots_.front();
    const std::vector<int32_t> candidates = thread_candidates(usable_cpus());
    if (auto c = calibrate_threads(ctx_.get(), pools_, slot.seq, static_cast<llama_pos>(slot.cached.size()), 0,
                                   candidates)) {
        threads_ = *c;
        model_->set_measured_threads(*c);
        std::fprintf(stderr, "specd: a %s model's decode step time drifted; threads now %s\n",
                     model_->info().architecture.c_str(), describe(*c).c_str());
    }
    pools_.attach(ctx_.get(), threads_.n_threads, threads_.n_threads_batch);
    drift_.emplace(chosen_step_s(threads_));
}

Session::~Session() = default;

// llama.cpp asks between micro-batches: a decode stops early only when every request it
// serves has been cancelled (the others still need its result).
bool Session::abort_step(void * data) {
    const auto & runs = static_cast<const Session *>(data)->in_batch_;
    if (runs.empty()) return false;
    return std::all_of(runs.begin(), runs.end(), [](const Run * r) { return r->cancel.load(std::memory_order_relaxed); });
}

void Session::save_live(Slot & slot, size_t keep) {
    if (!cache_.cache || !cache_.cache->enabled()) return;
    if (slot.cached.size() < keep + k_save_min_lost || cache_.cache->covers(cache_.ns, slot.cached)) return;
    const size_t budget = cache_.cache->budget_bytes();
    auto         target = save_seq_state(ctx_.get(), slot.seq, slot.cached, budget);
    if (!target) return;
    std::optional<cache::SeqState> draft;
    if (slot.draft) draft = slot.draft->save_state(budget - std::min(budget, target->bytes.size()));
    cache_.cache->store(cache_.ns, std::move(*target), std::move(draft));
}

void Session::park() {
    for (auto & slot : slots_) {
        if (!slot->busy) save_live(*slot, 0);
    }
}

bool Session::restore(Slot & slot, const cache::CacheEntry & entry, size_t n_tokens) {
    slot.cached.clear();
    if (!restore_seq_state(ctx_.get(), slot.seq, entry.target, n_tokens)) return false;
    slot.cached.assign(entry.target.tokens.begin(), entry.target.tokens.begin() + static_cast<std::ptrdiff_t>(n_tokens));
    // The draft keeps whatever prefix of its saved sequence the next proposal shares.
    if (slot.draft && entry.draft) slot.draft->restore_state(*entry.draft);
    return true;
}

size_t Session::reuse_saved(Slot & slot, const MultimodalPrompt & mm, size_t live) {
    const std::vector<llama_token> & prompt = mm.tokens;
    // The last prompt token is always evaluated (its logits start the answer).
    const size_t wanted = prompt.size() - 1;
    if (!cache_.cache || !cache_.cache->enabled() || live + k_restore_min_gain > wanted) {
        save_live(slot, live);
        return live;
    }
    const cache::PromptCache::Hit hit = cache_.cache->find(cache_.ns, prompt);
    const size_t                  n   = image_boundary(mm, std::min(hit.length, wanted));
    if (!hit.entry || n < live + k_restore_min_gain) {
        cache_.cache->count_miss();
        save_live(slot, live);
        return live;
    }
    save_live(slot, 0); // the restore replaces all of it
    if (!restore(slot, *hit.entry, n)) {
        cache_.cache->count_miss();
        return 0;
    }
    cache_.cache->count_hit(n);
    return n;
}

Projector::EvalTimes Session::eval_image(Run & run, const MultimodalPrompt & prompt, const ImageSpan & image) {
    // Attention over an image's tokens may be non-causal: all of them in one micro-batch (the
    // runner sizes the context for the request's largest image; llama.cpp aborts otherwise).
    if (!prompt.projector || image.n_pos > size_t(batch_.capacity())) {
        throw Error(ErrorKind::internal, "the context cannot hold an image of " + std::to_string(image.n_pos) +
                                             " tokens in one batch");
    }
    Slot &               slot = run.slot;
    const size_t         pos  = slot.cached.size();
    Projector::EvalTimes times;
    // The image is decoded on its own, between steps (no batch is decoding now): its
    // decodes stop early for its own request only.
    struct Watch {
        std::vector<Run *> & in_batch;
        ~Watch() { in_batch.clear(); }
    };
    try {
        in_batch_ = {&run};
        Watch watch{in_batch_};
        times = prompt.projector->eval(image, ctx_.get(), slot.seq, static_cast<llama_pos>(pos), batch_.capacity());
    } catch (...) {
        llama_memory_seq_rm(llama_get_memory(ctx_.get()), slot.seq, -1, -1);
        slot.cached.clear();
        if (run.cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        throw;
    }
    slot.cached.insert(slot.cached.end(), prompt.tokens.begin() + static_cast<std::ptrdiff_t>(pos),
                       prompt.tokens.begin() + static_cast<std::ptrdiff_t>(pos + image.n_pos));
    return times;
}

Session::Forced Session::forced_tokens(const grammar::Constraint & state, llama_token prev, int max_tokens) {
    Forced f;
    f.text = state.forced_text(k_forced_max_bytes);
    if (f.text.empty()) return f;
    // The target may still spell the text differently; it then rejects the run where the
    // tokens diverge, and the speller learns its choice.
    f.tokens = speller_.spell(prev, f.text, size_t(max_tokens));
    f.tokens.resize(state.legal_prefix(f.tokens));
    return f;
}

void Session::shift_context(Slot & slot, int32_t n_keep) {
    llama_memory_t mem     = llama_get_memory(ctx_.get());
    const int32_t  n_past  = static_cast<int32_t>(slot.cached.size());
    const int32_t  discard = (n_past - n_keep) / 2;
    llama_memory_seq_rm(mem, slot.seq, n_keep, n_keep + discard);
    llama_memory_seq_add(mem, slot.seq, n_keep + discard, n_past, -discard);
    slot.cached.erase(slot.cached.begin() + n_keep, slot.cached.begin() + n_keep + discard);
}

Session::Slot & Session::pick_slot(const MultimodalPrompt & prompt) {
    Slot * best        = nullptr;
    size_t best_common = 0;
    for (auto & slot : slots_) {
        if (slot->busy) continue;
        size_t common = 0;
        while (common < slot->cached.size() && common < prompt.tokens.size() &&
               slot->cached[common] == prompt.tokens[common]) {
            ++common;
        }
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
    if (static_cast<int32_t>(prompt.size()) >= n_ctx) {
        if (!mm.images.empty()) {
            throw bad_request("the prompt with its images is " + std::to_string(prompt.size()) +
                              " tokens, longer than the context length of " + std::to_string(n_ctx) +
                              " tokens (a prompt with images is never truncated)");
        }
        if (!opts.truncate) {
            throw bad_request("the prompt is " + std::to_string(prompt.size()) +
                              " tokens, longer than the context length of " + std::to_string(n_ctx) +
                              " tokens (truncate is false)");
        }
        prompt = truncate_prompt(prompt, n_ctx, opts.num_keep);
    }
    Slot & slot = pick_slot(mm);
    auto   run  = std::make_unique<Run>(*this, slot, ++next_id_, std::move(mm), std::move(opts), std::move(emit),
                                        std::move(emit_logprobs), cancel);
    slot.busy      = true;
    slot.last_used = ++clock_;
    runs_.push_back(std::move(run));
    return next_id_;
}

void Session::fail_batch(const std::vector<Run *> & in_batch, const std::exception_ptr & why) {
    llama_memory_t mem = llama_get_memory(ctx_.get());
    for (Run * r : in_batch) {
        llama_memory_seq_rm(mem, r->slot.seq, -1, -1);
        r->slot.cached.clear();
        r->error = r->cancel.load() ? std::make_exception_ptr(Error(ErrorKind::cancelled, "request cancelled")) : why;
    }
}

std::vector<SeqFinished> Session::step() {
    const auto guarded = [](Run & r, auto && fn) {
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
    // left: small ones while streams are running, so that those keep flowing.
    batch_.clear();
    std::vector<Run *> in_batch;
    for (auto & r : runs_) {
        if (r->ended() || r->prefilling()) continue;
        if (guarded(*r, [&] { return r->add_round(); })) in_batch.push_back(r.get());
    }
    const bool streaming = !in_batch.empty();
    for (auto & r : runs_) {
        if (r->ended() || !r->prefilling()) continue;
        int32_t room = batch_.capacity() - batch_.size();
        if (streaming) room = std::min(room, k_prefill_chunk_streaming);
        if (room <= 0) break;
        if (guarded(*r, [&] { return r->add_prefill(room); })) in_batch.push_back(r.get());
    }

    // 2. One decode for all of them.
    last_step_requests_ = batch_.size() > 0 ? static_cast<int>(in_batch.size()) : 0;
    if (batch_.size() > 0) {
        in_batch_           = in_batch;
        const int64_t t0    = now_ns();
        const int32_t rc    = llama_decode(ctx_.get(), batch_.get());
        const int64_t t_dec = now_ns() - t0;
        in_batch_.clear();
        // One-token steps are what calibration timed: they tell when it no longer holds.
        if (drift_ && batch_.size() == 1 && drift_->observe(double(t_dec) / 1e9)) recheck_due_ = true;
        if (rc != 0) {
            fail_batch(in_batch, std::make_exception_ptr(
                                     Error(ErrorKind::internal, "llama_decode failed (" + std::to_string(rc) + ")")));
        } else {
            for (Run * r : in_batch) {
                guarded(*r, [&] {
                    r->after_decode(t_dec, static_cast<int>(in_batch.size()));
                    return true;
                });
            }
        }
    }

    // 3. The requests that ended leave; their sequences keep their KV for the next prompt.
    std::vector<SeqFinished> finished;
    for (auto it = runs_.begin(); it != runs_.end();) {
        Run & r = **it;
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

GenerateResult Session::generate(std::vector<llama_token> prompt, const GenerateOptions & opts,
                                 const TextSink & emit, const std::atomic<bool> & cancel,
                                 const LogprobSink & emit_logprobs) {
    return generate(MultimodalPrompt{std::move(prompt), {}, nullptr}, opts, emit, cancel, emit_logprobs);
}

GenerateResult Session::generate(MultimodalPrompt mm, const GenerateOptions & opts, const TextSink & emit,
                                 const std::atomic<bool> & cancel, const LogprobSink & emit_logprobs) {
    if (!runs_.empty()) throw Error(ErrorKind::internal, "generate() needs an idle session");
    const uint64_t id = start(std::move(mm), opts, emit, emit_logprobs, cancel);
    for (;;) {
        for (SeqFinished & f : step()) {
            if (f.id != id) continue;
            if (f.error) std::rethrow_exception(f.error);
            return std::move(f.result);
        }
    }
}

} // namespace specd::engine
