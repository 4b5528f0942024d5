#include "engine/request_run.h"

#include "engine/clock.h"

#include <algorithm>
#include <random>

namespace specd::engine {

namespace {

std::optional<int> draft_cap(const GenerateOptions & opts) {
    if (opts.draft_num_predict >= 0) return std::min<int>(opts.draft_num_predict, k_spec_max);
    return std::nullopt;
}

// A seed given is kept; a request without one gets a fresh random seed (reported nowhere).
TokenChoice token_choice(const GenerateOptions & opts, bool greedy) {
    const bool seeded = opts.sampling.seed >= 0;
    uint64_t   seed   = static_cast<uint64_t>(opts.sampling.seed);
    if (!seeded) {
        std::random_device rd;
        seed = (uint64_t(rd()) << 32) ^ rd();
    }
    return {.greedy = greedy, .seed = seed, .rejection = opts.rejection_sampling};
}

} // namespace

RequestRun::RequestRun(const RunEnv & env, SequenceSlot & slot, uint64_t id, MultimodalPrompt prompt,
                       GenerateOptions opts, TextSink emit, LogprobSink emit_logprobs, const std::atomic<bool> & cancel) :
    id(id), slot(slot), cancel(cancel), env_(env), mm_(std::move(prompt)), opts_(std::move(opts)),
    emit_(std::move(emit)), emit_logprobs_(std::move(emit_logprobs)),
    sampler_(env.model, opts_.sampling, opts_.grammar), choice_(token_choice(opts_, sampler_.greedy())),
    rng_(choice_.seed),
    depth_(env.prior, draft_cap(opts_), spec::DepthConfig{.k_max = k_spec_max, .fixed_k = opts_.draft_fixed_k.value_or(-1)},
           &env.acceptance, &env.steps),
    out_(env.model, opts_, emit_, emit_logprobs_) {
    const std::vector<llama_token> & prompt_tokens = mm_.tokens;
    const size_t history = std::min(prompt_tokens.size(), size_t(std::max(opts_.sampling.repeat_last_n, 0)));
    // Penalties look at the prompt's text tokens; image positions have no token id.
    std::vector<llama_token> recent;
    for (llama_token t : std::span(prompt_tokens).last(history)) {
        if (!is_image_token(t)) recent.push_back(t);
    }
    sampler_.accept_history(recent);
    if (slot.draft) slot.draft->begin_request(opts_.sampling, &cancel);
    if (slot.head) slot.head->begin_request(opts_.sampling, &cancel);
    const int32_t n_ctx = int32_t(env.n_ctx);
    n_keep_    = std::clamp(opts_.num_keep, 0, n_ctx / 2);
    can_shift_ = opts_.shift && opts_.num_predict != -2 && llama_memory_can_shift(llama_get_memory(env.ctx));
}

bool RequestRun::add_prefill(int32_t room) {
    Batch & batch = env_.batch;
    if (!prefill_started_) begin_prefill();
    const std::vector<llama_token> & tokens = mm_.tokens;
    const int32_t chunk = std::max(1, std::min({env_.num_batch, batch.capacity(), room}));
    int32_t added = 0;
    while (pos_ < tokens.size() && added < chunk) {
        if (next_image_ < mm_.images.size() && pos_ == mm_.images[next_image_].start) {
            if (added > 0) break; // the image goes after this chunk's text is decoded
            const ImageSpan & image = mm_.images[next_image_++];
            const auto        times = env_.eval_image(*this, mm_, image);
            result_.stats.image_count += 1;
            result_.stats.image_tokens += static_cast<int32_t>(image.n_tokens);
            result_.stats.image_encode_ns += times.encode_ns;
            result_.stats.image_decode_ns += times.decode_ns;
            pos_ += image.n_tokens;
            continue;
        }
        const size_t end = next_image_ < mm_.images.size() ? mm_.images[next_image_].start : tokens.size();
        // Positions continue the sequence's (past an M-RoPE image, fewer than its cells): text
        // tokens take one each.
        const llama_pos base = slot.kv.next_pos() - static_cast<llama_pos>(slot.kv.size());
        if (added == 0) part_ = {batch.size(), 0};
        for (; pos_ < end && added < chunk; ++pos_, ++added) {
            const bool    last = pos_ + 1 == tokens.size();
            const int32_t idx  = batch.add(tokens[pos_], base + static_cast<llama_pos>(pos_), slot.kv.id(), last);
            if (last) logits_idx_ = idx;
            ++part_.n;
        }
    }
    return added > 0;
}

bool RequestRun::open_round(int32_t room, bool may_draft, std::optional<int> batch_depth) {
    const int32_t n_ctx = int32_t(env_.n_ctx);
    KvSequence &  kv    = slot.kv;
    if (static_cast<int32_t>(kv.size()) + 1 > n_ctx) {
        if (!can_shift_) {
            out_.end(DoneReason::length);
            phase_ = Phase::ended;
            return false;
        }
        kv.shift(size_t(n_keep_), (kv.size() - size_t(n_keep_)) / 2);
        if (slot.head) slot.head->forget();
    }
    // 1-2. Plan, within the context, num_predict and the batch's room.
    const int ctx_room = n_ctx - static_cast<int>(kv.size()) - 1;
    const int budget   = std::min({ctx_room, out_.remaining() - 1, room - 1});
    plan_ = engine::open_round({.grammar     = sampler_.constraint(),
                                .last        = last_,
                                .history     = kv.tokens(),
                                .budget      = budget,
                                .seed        = choice_.seed,
                                .first_index = next_index_,
                                // A fixed depth (draft_depth) is the request's own choice: the
                                // gate is the adaptive policy's.
                                .may_draft   = may_draft || opts_.draft_fixed_k.has_value(),
                                .batch_depth = batch_depth},
                               depth_, slot.ngram, env_.speller);
    return true;
}

bool RequestRun::feeds_head() const {
    return slot.head && opts_.draft_num_predict != 0 && opts_.draft_fixed_k.value_or(1) != 0;
}

std::optional<spec::DraftRequest> RequestRun::draft_request() const {
    return slot.draft || slot.head ? plan_.model_request() : std::nullopt;
}

void RequestRun::add_round(spec::Proposal drafted, std::optional<int64_t> draft_ns) {
    close_round(plan_, std::move(drafted), draft_ns, cancel);
    // 3. The last token plus the forced tokens and drafts, logits for all:
    // (1 + n_forced + n_drafted) positions from the sequence's next one.
    Batch &         batch = env_.batch;
    KvSequence &    kv    = slot.kv;
    const llama_pos pos0  = kv.next_pos();
    logits_idx_           = batch.add(last_, pos0, kv.id(), true);
    for (size_t i = 0; i < plan_.tokens.size(); ++i) {
        batch.add(plan_.tokens[i], pos0 + 1 + static_cast<llama_pos>(i), kv.id(), true);
    }
    part_ = {logits_idx_, 1 + static_cast<int32_t>(plan_.tokens.size())};
}

void RequestRun::after_decode(int64_t decode_ns, int batch_runs, int batch_positions) {
    if (prefilling()) after_prefill_chunk();
    else after_round(decode_ns, batch_runs, batch_positions);
}

GenerateResult RequestRun::finish() {
    out_.finish();
    result_.reason           = out_.reason();
    result_.stats.eval_count = out_.eval_count();
    result_.stats.eval_ns    = t1_ > 0 ? now_ns() - t1_ : 0;
    result_.grammar_drafts.grammar_ns += sampler_.grammar_ns();
    result_.speculation = depth_.stats();
    if (slot.head) result_.drafter = draft_kind_name(slot.head->kind());
    else if (slot.draft) result_.drafter = draft_kind_name(DraftKind::model);
    result_.context     = mm_.tokens;
    result_.context.insert(result_.context.end(), out_.tokens().begin(), out_.tokens().end());
    depth_.fold_into(env_.prior);
    return std::move(result_);
}

// Makes the slot's KV hold the longest usable prefix of the prompt (its own, or a saved
// state's), and drops the rest.
void RequestRun::begin_prefill() {
    prefill_started_ = true;
    t0_              = now_ns();
    const PromptReuse::Prepared kept   = env_.reuse.prepare(slot.kv, slot.companion(), mm_);
    size_t                      common = kept.common;
    if (slot.head) common = slot.head->begin_prompt(slot.kv, common, !kept.restored, feeds_head(), mm_.tokens);
    pos_         = common;
    prompt_kept_ = common;
    while (next_image_ < mm_.images.size() && mm_.images[next_image_].start < common) ++next_image_;
}

void RequestRun::after_prefill_chunk() {
    const std::vector<llama_token> & tokens = mm_.tokens;
    slot.kv.appended(std::span(tokens).subspan(slot.kv.size(), pos_ - slot.kv.size()));
    // The chunk's last row chose the next prompt token (or, after the last chunk, last_).
    if (slot.head) slot.head->take_row(part_.first + part_.n - 1, slot.kv);
    if (pos_ < tokens.size()) return;
    result_.stats.prompt_eval_count = static_cast<int32_t>(tokens.size() - prompt_kept_);
    result_.stats.prompt_count      = static_cast<int32_t>(tokens.size());
    t1_                             = now_ns();
    result_.stats.prompt_eval_ns    = t1_ - t0_;
    // The first token comes from the prompt's logits; every later one from a round. Tokens
    // are keyed by their index in the prompt + answer sequence (TokenChoice).
    phase_      = Phase::generate;
    next_index_ = static_cast<spec::seq_index>(tokens.size());
    last_       = choice_.draw(sampler_.distribution(env_.ctx, logits_idx_), next_index_++);
    sampler_.accept(last_);
    if (out_.commit(last_, env_.ctx, logits_idx_)) phase_ = Phase::ended;
    env_.live.generated += out_.eval_count();
}

void RequestRun::after_round(int64_t decode_ns, int batch_runs, int batch_positions) {
    // 4. Verify position by position; the sampler's state always matches what is committed.
    const int32_t      eval_before = out_.eval_count();
    const RoundOutcome outcome = verify_round(plan_, last_, logits_idx_, next_index_, choice_, env_.ctx, sampler_,
                                              out_, env_.speller, env_.model, rng_);
    next_index_ += outcome.n_accepted + 1;

    // 5. The KV keeps the last token and the accepted prefix; the rest of the round goes.
    // `next` is the new last token (not decoded yet).
    slot.kv.appended(last_);
    slot.kv.appended(std::span(plan_.tokens).first(size_t(outcome.n_accepted)));
    slot.kv.keep(slot.kv.size());
    last_ = outcome.next;
    // The row after the accepted prefix chose `next`: the head drafts on from it.
    if (slot.head) slot.head->take_row(logits_idx_ + outcome.n_accepted, slot.kv);
    if (outcome.done) phase_ = Phase::ended;

    const int n_drafted = plan_.n_drafted();
    const spec::RoundObservation seen = observation(plan_, outcome, decode_ns, batch_runs, batch_positions);
    env_.live.add_round(out_.eval_count() - eval_before, n_drafted, seen.n_accepted, seen.n_forced, seen.n_forced_accepted);
    if (result_.k_histogram.size() <= size_t(n_drafted)) result_.k_histogram.resize(size_t(n_drafted) + 1);
    ++result_.k_histogram[size_t(n_drafted)];
    GrammarDraftStats & g = result_.grammar_drafts;
    g.forced += plan_.n_forced;
    g.forced_accepted += std::min(outcome.n_accepted, plan_.n_forced);
    g.grammar_ns += plan_.grammar.grammar_ns;
    g.no_legal_draft += plan_.grammar.no_legal_draft;
    g.truncated_rounds += plan_.grammar.truncated_rounds;
    g.truncated_tokens += plan_.grammar.truncated_tokens;
    depth_.observe(seen);
}

} // namespace specd::engine
