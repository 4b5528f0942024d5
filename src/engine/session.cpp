#include "engine/session.h"

#include "core/error.h"
#include "engine/context_factory.h"
#include "engine/logprobs.h"
#include "engine/sampler.h"
#include "engine/seq_state.h"
#include "engine/stop_matcher.h"
#include "engine/utf8_stream.h"
#include "grammar/json_schema.h"
#include "spec/verifier.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>

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

// One thread per core, except for very small models: a decode step of a few MB of weights is
// shorter than the threads' barrier, and on a busy machine a descheduled worker stalls every
// step (measured on the 17 MB test model, 2 cores, other work running: 1 thread ~1500-3000
// tokens/s, 2 threads 5-20 tokens/s).
int32_t default_threads(const Model & model) {
    constexpr uint64_t small_model_bytes = 256ull << 20;
    if (model.size_bytes() < small_model_bytes) return 1;
    return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
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

Session::Session(std::shared_ptr<Model> model, const ContextOptions & opts, std::shared_ptr<Model> draft,
                 PromptCacheLink cache) :
    model_(std::move(model)),
    opts_(opts),
    n_ctx_(static_cast<uint32_t>(clamp_ctx(opts.num_ctx, model_->n_ctx_train()))),
    // A verify batch holds 1 + forced + k tokens, whatever num_batch says.
    batch_(std::max({1, std::min(opts.num_batch, static_cast<int32_t>(n_ctx_)), 1 + k_forced_max + k_spec_max}), 1),
    speller_(*model_),
    cache_(std::move(cache)) {
    const int32_t n_ctx     = static_cast<int32_t>(n_ctx_);
    const int32_t n_threads = opts.num_thread > 0 ? opts.num_thread : default_threads(*model_);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx               = n_ctx;
    cp.n_batch             = batch_.capacity();
    cp.n_ubatch            = batch_.capacity();
    cp.n_seq_max           = 1;
    cp.n_threads           = n_threads;
    cp.n_threads_batch     = n_threads;
    cp.abort_callback      = abort_when_cancelled;
    cp.abort_callback_data = &cancel_;

    CreatedContext created = create_context(*model_, cp, "cannot create a context of " + std::to_string(n_ctx) + " tokens");
    ctx_           = std::move(created.ctx);
    memory_.target = created.bytes;
    if (draft) {
        draft_        = std::make_unique<DraftModel>(std::move(draft), *model_, n_ctx_, batch_.capacity());
        memory_.draft = draft_->memory();
    }
    drafters_.add(&ngram_);
    if (draft_) drafters_.add(draft_.get());
}

void Session::decode_or_throw(const std::atomic<bool> & cancel) {
    const int32_t rc = llama_decode(ctx_.get(), batch_.get());
    if (rc == 0) return;
    // After a failed or aborted decode the cache may hold part of the batch: forget it all.
    llama_memory_clear(llama_get_memory(ctx_.get()), true);
    cached_.clear();
    if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
    throw Error(ErrorKind::internal, "llama_decode failed (" + std::to_string(rc) + ")");
}

void Session::save_live(size_t keep) {
    if (!cache_.cache || !cache_.cache->enabled()) return;
    if (cached_.size() < keep + k_save_min_lost || cache_.cache->covers(cache_.ns, cached_)) return;
    const size_t budget = cache_.cache->budget_bytes();
    auto         target = save_seq_state(ctx_.get(), cached_, budget);
    if (!target) return;
    std::optional<cache::SeqState> draft;
    if (draft_) draft = draft_->save_state(budget - std::min(budget, target->bytes.size()));
    cache_.cache->store(cache_.ns, std::move(*target), std::move(draft));
}

void Session::park() { save_live(0); }

bool Session::restore(const cache::CacheEntry & entry, size_t n_tokens) {
    cached_.clear();
    if (!restore_seq_state(ctx_.get(), entry.target, n_tokens)) return false;
    cached_.assign(entry.target.tokens.begin(), entry.target.tokens.begin() + static_cast<std::ptrdiff_t>(n_tokens));
    // The draft keeps whatever prefix of its saved sequence the next proposal shares.
    if (draft_ && entry.draft) draft_->restore_state(*entry.draft);
    return true;
}

size_t Session::reuse_saved(const MultimodalPrompt & mm, size_t live) {
    const std::vector<llama_token> & prompt = mm.tokens;
    // The last prompt token is always evaluated (its logits start the answer).
    const size_t wanted = prompt.size() - 1;
    if (!cache_.cache || !cache_.cache->enabled() || live + k_restore_min_gain > wanted) {
        save_live(live);
        return live;
    }
    const cache::PromptCache::Hit hit = cache_.cache->find(cache_.ns, prompt);
    const size_t                  n   = image_boundary(mm, std::min(hit.length, wanted));
    if (!hit.entry || n < live + k_restore_min_gain) {
        cache_.cache->count_miss();
        save_live(live);
        return live;
    }
    save_live(0); // the restore replaces all of it
    if (!restore(*hit.entry, n)) {
        cache_.cache->count_miss();
        return 0;
    }
    cache_.cache->count_hit(n);
    return n;
}

int32_t Session::prefill(const MultimodalPrompt & prompt, const std::atomic<bool> & cancel, GenerateStats & stats) {
    const std::vector<llama_token> & tokens = prompt.tokens;
    llama_memory_t mem = llama_get_memory(ctx_.get());
    size_t common = 0;
    while (common < cached_.size() && common < tokens.size() && cached_[common] == tokens[common]) ++common;
    common = reuse_saved(prompt, image_boundary(prompt, common));
    if (common == tokens.size()) --common; // the last prompt token must be decoded for its logits
    if (!llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(common), -1)) {
        llama_memory_clear(mem, true);
        common = 0;
    }
    cached_.resize(common);

    const int32_t chunk      = std::max(1, std::min(opts_.num_batch, batch_.capacity()));
    int32_t       last_idx   = -1;
    size_t        next_image = 0;
    while (next_image < prompt.images.size() && prompt.images[next_image].start < common) ++next_image;
    for (size_t i = common; i < tokens.size();) {
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        if (next_image < prompt.images.size() && i == prompt.images[next_image].start) {
            const ImageSpan & image = prompt.images[next_image++];
            const auto        times = eval_image(prompt, image, cancel);
            stats.image_count += 1;
            stats.image_tokens += static_cast<int32_t>(image.n_pos);
            stats.image_encode_ns += times.encode_ns;
            stats.image_decode_ns += times.decode_ns;
            i += image.n_pos;
            continue;
        }
        const size_t end = next_image < prompt.images.size() ? prompt.images[next_image].start : tokens.size();
        batch_.clear();
        for (; i < end && batch_.size() < chunk; ++i) {
            last_idx = batch_.add(tokens[i], static_cast<llama_pos>(i), 0, i + 1 == tokens.size());
        }
        decode_or_throw(cancel);
        cached_.insert(cached_.end(), tokens.begin() + cached_.size(), tokens.begin() + i);
    }
    stats.prompt_eval_count = static_cast<int32_t>(tokens.size() - common);
    stats.prompt_count      = static_cast<int32_t>(tokens.size());
    return last_idx;
}

Projector::EvalTimes Session::eval_image(const MultimodalPrompt & prompt, const ImageSpan & image,
                                        const std::atomic<bool> & cancel) {
    // Attention over an image's tokens may be non-causal: all of them in one micro-batch (the
    // runner sizes the context for the request's largest image; llama.cpp aborts otherwise).
    if (!prompt.projector || image.n_pos > size_t(batch_.capacity())) {
        throw Error(ErrorKind::internal, "the context cannot hold an image of " + std::to_string(image.n_pos) +
                                             " tokens in one batch");
    }
    const size_t         pos = cached_.size();
    Projector::EvalTimes times;
    try {
        times = prompt.projector->eval(image, ctx_.get(), static_cast<llama_pos>(pos), batch_.capacity());
    } catch (...) {
        llama_memory_clear(llama_get_memory(ctx_.get()), true);
        cached_.clear();
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        throw;
    }
    cached_.insert(cached_.end(), prompt.tokens.begin() + static_cast<std::ptrdiff_t>(pos),
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

void Session::shift_context(int32_t n_keep) {
    llama_memory_t mem     = llama_get_memory(ctx_.get());
    const int32_t  n_past  = static_cast<int32_t>(cached_.size());
    const int32_t  discard = (n_past - n_keep) / 2;
    llama_memory_seq_rm(mem, 0, n_keep, n_keep + discard);
    llama_memory_seq_add(mem, 0, n_keep + discard, n_past, -discard);
    cached_.erase(cached_.begin() + n_keep, cached_.begin() + n_keep + discard);
}

// The per-request state of a generation: turns chosen tokens into text, and knows when the
// answer ends (end of generation, a stop string, num_predict, a complete JSON value).
// With logprobs, a token's log-probability goes out with the first text emitted at or after
// it; tokens whose text a stop string removed entirely are not reported.
class Session::Generation {
  public:
    Generation(const Model & model, llama_context * ctx, const GenerateOptions & opts, const TextSink & emit,
               const LogprobSink & emit_logprobs, GenerateResult & result) :
        model_(model), ctx_(ctx), opts_(opts), emit_(emit), emit_logprobs_(emit_logprobs), result_(result),
        stops_(opts.stop) {}

    // Records one token of the answer, chosen at batch index `idx`; true when the answer has ended.
    bool commit(llama_token token, int32_t idx) {
        if (model_.is_eog(token)) return end(DoneReason::stop);
        ++result_.stats.eval_count;
        result_.context.push_back(token);
        if (opts_.logprobs >= 0) pending_.push_back(logprob_at(idx, token));
        const auto r = stops_.push(utf8_.push(model_.token_piece(token)));
        if (!r.text.empty()) emit(r.text);
        if (r.stopped) {
            stopped_ = true;
            return end(DoneReason::stop);
        }
        if (opts_.end_on_complete_json) {
            answer_ += r.text;
            if (grammar::is_complete_json(answer_)) return end(DoneReason::stop);
        }
        if (opts_.num_predict > 0 && result_.stats.eval_count >= opts_.num_predict) return end(DoneReason::length);
        return false;
    }

    bool end(DoneReason reason) {
        result_.reason = reason;
        return true;
    }

    // Tokens the answer may still take (INT_MAX when unbounded).
    int remaining() const {
        return opts_.num_predict > 0 ? opts_.num_predict - result_.stats.eval_count : INT_MAX;
    }

    // Releases text held back for a possible stop string or an unfinished UTF-8 sequence.
    void finish() {
        if (stopped_) return;
        const auto  r    = stops_.push(utf8_.flush());
        std::string tail = r.text + (r.stopped ? "" : stops_.flush());
        if (!tail.empty() || (!r.stopped && !pending_.empty())) emit(tail);
    }

  private:
    void emit(const std::string & text) {
        if (!pending_.empty() && emit_logprobs_) emit_logprobs_(std::move(pending_));
        pending_.clear();
        emit_(text);
    }

    // Log-softmax of the target's raw logits at `idx` (before penalties, grammar, temperature).
    TokenLogprob logprob_at(int32_t idx, llama_token token) const {
        const float *          logits = llama_get_logits_ith(ctx_, idx);
        const size_t           n_vocab = size_t(llama_vocab_n_tokens(model_.vocab()));
        const PositionLogprobs p = position_logprobs({logits, n_vocab}, token, opts_.logprobs);
        TokenLogprob           out{model_.token_piece(token), p.chosen, {}};
        for (const auto & [id, lp] : p.top) out.top.push_back({model_.token_piece(id), lp});
        return out;
    }

    const Model &           model_;
    llama_context *         ctx_;
    const GenerateOptions & opts_;
    const TextSink &        emit_;
    const LogprobSink &     emit_logprobs_;
    std::vector<TokenLogprob> pending_; // committed tokens whose text has not gone out yet
    GenerateResult &        result_;
    Utf8Stream              utf8_;
    StopMatcher             stops_;
    bool                    stopped_ = false;
    std::string             answer_; // the text so far, kept only when end_on_complete_json needs it
};

GenerateResult Session::generate(std::vector<llama_token> prompt, const GenerateOptions & opts,
                                 const TextSink & emit, const std::atomic<bool> & cancel,
                                 const LogprobSink & emit_logprobs) {
    return generate(MultimodalPrompt{std::move(prompt), {}, nullptr}, opts, emit, cancel, emit_logprobs);
}

GenerateResult Session::generate(MultimodalPrompt mm, const GenerateOptions & opts, const TextSink & emit,
                                 const std::atomic<bool> & cancel, const LogprobSink & emit_logprobs) {
    std::vector<llama_token> & prompt = mm.tokens;
    struct CancelScope {
        Session & s;
        CancelScope(Session & s, const std::atomic<bool> & c) : s(s) { s.cancel_ = &c; }
        ~CancelScope() { s.cancel_ = nullptr; }
    } scope(*this, cancel);
    const auto check_cancel = [&] {
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
    };

    const int32_t n_ctx = static_cast<int32_t>(this->n_ctx());
    if (prompt.empty()) throw bad_request("prompt is empty after tokenization");
    if (!prompt.empty() && is_image_token(prompt.back())) throw bad_request("a prompt cannot end with an image");
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

    GenerateResult result;
    Sampler        sampler(*model_, opts.sampling, opts.grammar);
    spec::Rng      rng     = make_rng(opts.sampling.seed);
    const size_t   history = std::min(prompt.size(), static_cast<size_t>(std::max(opts.sampling.repeat_last_n, 0)));
    // Penalties look at the prompt's text tokens; image positions have no token id.
    std::vector<llama_token> recent;
    for (llama_token t : std::span(prompt).last(history)) {
        if (!is_image_token(t)) recent.push_back(t);
    }
    sampler.accept_history(recent);

    std::optional<int> cap;
    if (opts.draft_num_predict >= 0) cap = std::min<int>(opts.draft_num_predict, k_spec_max);
    spec::DepthController depth(prior_, cap, spec::DepthConfig{.k_max = k_spec_max});
    if (draft_) draft_->begin_request(opts.sampling, &cancel);

    const int64_t t0  = now_ns();
    const int32_t idx = prefill(mm, cancel, result.stats);
    const int64_t t1  = now_ns();
    result.stats.prompt_eval_ns = t1 - t0;
    result.context              = prompt;

    Generation    gen(*model_, ctx_.get(), opts, emit, emit_logprobs, result);
    const int32_t n_keep    = std::clamp(opts.num_keep, 0, n_ctx / 2);
    const bool    can_shift = opts.shift && opts.num_predict != -2 && llama_memory_can_shift(llama_get_memory(ctx_.get()));

    // The first token comes from the prompt's logits; every later one from a round.
    auto        choose = [&](const spec::TokenDist & p) { return sampler.greedy() ? p.ids[0] : p.draw(spec::uniform01(rng)); };
    llama_token last   = choose(sampler.distribution(ctx_.get(), idx));
    sampler.accept(last);
    bool done = gen.commit(last, idx);

    std::vector<llama_token> history_buf;
    while (!done) {
        check_cancel();
        if (static_cast<int32_t>(cached_.size()) + 1 > n_ctx) {
            if (!can_shift) { done = gen.end(DoneReason::length); break; }
            shift_context(n_keep);
        }
        // 1-2. Plan and draft. First the text the grammar forces from here (free: no model
        // ran to find it), as much of it as the controller finds worth verifying; then the
        // depth k of prompt lookup or the draft model under the grammar's state after that
        // text. The context and num_predict bound both. Every proposed token is verified by
        // the target below like any draft.
        const int     room   = n_ctx - static_cast<int>(cached_.size()) - 1;
        const int     budget = std::min(room, gen.remaining() - 1);
        const int64_t td0    = now_ns();
        std::vector<llama_token>     drafts; // (n_forced + n_drafted)
        std::vector<spec::TokenDist> dists;  // (n_forced + n_drafted): what each was drawn from
        int                          n_forced = 0;
        std::optional<grammar::Constraint> after_forced;
        Forced                             forced;
        const grammar::Constraint *        state = sampler.constraint();
        int64_t grammar_round_ns = 0;
        const bool look_for_forced = state && budget > 0 &&
                                     (opts.draft_fixed_k ? *opts.draft_fixed_k > 0 : depth.wants_forced());
        if (look_for_forced) {
            forced = forced_tokens(*state, last, std::min(budget, k_forced_max));
            const int use = opts.draft_fixed_k ? static_cast<int>(forced.tokens.size())
                                               : depth.plan_forced(static_cast<int>(forced.tokens.size()));
            forced.tokens.resize(size_t(use));
            drafts   = forced.tokens;
            n_forced = static_cast<int>(drafts.size());
            for (llama_token t : drafts) dists.push_back(spec::TokenDist::point(t));
            if (n_forced > 0) {
                after_forced.emplace(state->clone());
                for (llama_token t : drafts) after_forced->accept(t);
                state = &*after_forced;
            }
            grammar_round_ns += now_ns() - td0;
        }
        const int planned = opts.draft_fixed_k ? *opts.draft_fixed_k : depth.plan(n_forced);
        const int k       = std::min(planned, budget - n_forced);
        if (k > 0) {
            history_buf.assign(cached_.begin(), cached_.end());
            history_buf.push_back(last);
            history_buf.insert(history_buf.end(), drafts.begin(), drafts.end());
            spec::Proposal proposal = drafters_.propose(history_buf, k, rng, state);
            check_cancel();
            // Under a grammar a draft is cut at its first illegal token: verifying it would
            // only cost positions the target is sure to reject.
            const int64_t tg0   = now_ns();
            // Prompt lookup copies what followed a match in the history, image positions
            // included: those are no tokens to propose.
            const auto image_at = std::find_if(proposal.tokens.begin(), proposal.tokens.end(), is_image_token);
            proposal.tokens.erase(image_at, proposal.tokens.end());
            proposal.dists.resize(proposal.tokens.size());
            const size_t  legal = state ? state->legal_prefix(proposal.tokens) : proposal.tokens.size();
            if (state) grammar_round_ns += now_ns() - tg0;
            if (legal < proposal.tokens.size()) {
                auto & g = result.grammar_drafts;
                if (legal == 0) ++g.no_legal_draft;
                else ++g.truncated_rounds;
                g.truncated_tokens += static_cast<int64_t>(proposal.tokens.size() - legal);
            }
            drafts.insert(drafts.end(), proposal.tokens.begin(), proposal.tokens.begin() + legal);
            dists.insert(dists.end(), std::make_move_iterator(proposal.dists.begin()),
                         std::make_move_iterator(proposal.dists.begin() + legal));
        }
        const int     n_drafted = static_cast<int>(drafts.size()) - n_forced;
        const int64_t td1       = now_ns();

        // 3. One target batch: the last token plus the forced tokens and drafts, logits for all.
        // (1 + n_forced + n_drafted) positions starting at P = cached_.size()
        const llama_pos pos0 = static_cast<llama_pos>(cached_.size());
        batch_.clear();
        batch_.add(last, pos0, 0, true);
        for (size_t i = 0; i < drafts.size(); ++i) batch_.add(drafts[i], pos0 + 1 + static_cast<llama_pos>(i), 0, true);
        decode_or_throw(cancel);
        const int64_t td2 = now_ns();
        cached_.push_back(last);

        // 4. Verify position by position; the chain state always matches what is committed.
        int              n_accepted = 0;
        llama_token      next       = -1;
        std::string_view forced_rest = forced.text; // what is still forced at position i < n_forced
        for (size_t i = 0; i <= drafts.size(); ++i) {
            const spec::TokenDist p = sampler.distribution(ctx_.get(), static_cast<int32_t>(i));
            bool                  accepted = false;
            if (i < drafts.size()) {
                const auto v = sampler.greedy() ? spec::verify_greedy(drafts[i], p.ids[0])
                                                : spec::verify_stochastic(drafts[i], p, dists[i], rng);
                accepted = v.accepted;
                next     = v.token;
            } else {
                next = choose(p);
            }
            sampler.accept(next);
            if (i < size_t(n_forced)) {
                speller_.learn(i == 0 ? last : drafts[i - 1], forced_rest, next);
                forced_rest.remove_prefix(std::min(forced_rest.size(), model_->token_piece(next).size()));
            }
            done = gen.commit(next, static_cast<int32_t>(i));
            if (!accepted || done) break;
            ++n_accepted;
            cached_.push_back(next); // an accepted draft's KV is already in the cache
        }

        // 5. Roll back what was not accepted; `next` is the new last token (not decoded yet).
        llama_memory_seq_rm(llama_get_memory(ctx_.get()), 0, pos0 + 1 + n_accepted, -1);
        last = next;
        if (result.k_histogram.size() <= size_t(n_drafted)) result.k_histogram.resize(size_t(n_drafted) + 1);
        ++result.k_histogram[size_t(n_drafted)];
        result.grammar_drafts.forced += n_forced;
        result.grammar_drafts.grammar_ns += grammar_round_ns;
        result.grammar_drafts.forced_accepted += std::min(n_accepted, n_forced);
        // The drafts were judged only if the forced run ahead of them was accepted in full.
        const bool judged = n_accepted >= n_forced;
        depth.observe({.k_planned     = std::max(k, 0),
                       .n_drafted     = n_drafted,
                       .n_accepted    = judged ? n_accepted - n_forced : 0,
                       .n_forced      = n_forced,
                       .n_forced_accepted = std::min(n_accepted, n_forced),
                       .drafts_judged = judged,
                       .draft_s       = (td1 - td0) / 1e9,
                       .verify_s      = (td2 - td1) / 1e9});
    }
    gen.finish();
    result.stats.eval_ns = now_ns() - t1;
    result.grammar_drafts.grammar_ns += sampler.grammar_ns();
    result.speculation   = depth.stats();
    depth.fold_into(prior_);
    return result;
}

} // namespace specd::engine
