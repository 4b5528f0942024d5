#include "engine/draft_model.h"

#include "core/error.h"
#include "engine/context_factory.h"

#include <cstring>

namespace specd::engine {

namespace {

// After a gap longer than this (tokens the draft did not see), the draft restarts on the
// last k_window tokens instead of catching up. The first proposal of a request always syncs
// in full, so the draft starts from the whole prompt.
constexpr size_t k_rewindow_gap = 48;
constexpr size_t k_window       = 16;

} // namespace

std::string vocab_mismatch(const Model & target, const Model & draft) {
    const llama_vocab * a = target.vocab();
    const llama_vocab * b = draft.vocab();
    if (llama_vocab_type(a) != llama_vocab_type(b)) return "the draft's tokenizer type differs from the model's";
    const int32_t n = llama_vocab_n_tokens(a);
    if (n != llama_vocab_n_tokens(b)) {
        return "the draft's vocabulary has " + std::to_string(llama_vocab_n_tokens(b)) + " tokens, the model's " +
               std::to_string(n);
    }
    if (llama_vocab_bos(a) != llama_vocab_bos(b) || llama_vocab_eos(a) != llama_vocab_eos(b)) {
        return "the draft's special tokens differ from the model's";
    }
    for (int32_t t = 0; t < n; ++t) {
        if (std::strcmp(llama_vocab_get_text(a, t), llama_vocab_get_text(b, t)) != 0) {
            return "the draft's token " + std::to_string(t) + " differs from the model's";
        }
    }
    return "";
}

DraftModel::DraftModel(std::shared_ptr<Model> draft, const Model & target, uint32_t n_ctx, int32_t n_batch) :
    model_(std::move(draft)), batch_(std::max(1, n_batch), 1), kv_(nullptr, 0) {
    if (auto why = vocab_mismatch(target, *model_); !why.empty()) {
        throw bad_request("draft model cannot be used: " + why);
    }
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx                = n_ctx;
    cp.n_batch              = batch_.capacity();
    cp.n_ubatch             = batch_.capacity();
    cp.n_seq_max            = 1;
    cp.n_threads = cp.n_threads_batch = 1; // until use_threads(): the session measures the draft's
    CreatedContext created = create_context(*model_, cp, "cannot create the draft model's context");
    ctx_                   = std::move(created.ctx);
    memory_                = created.bytes;
    kv_                    = KvSequence(ctx_.get(), 0);
    const llama_token nl = llama_vocab_nl(model_->vocab());
    filler_              = nl != LLAMA_TOKEN_NULL ? nl : 0;
}

std::optional<ThreadChoice> DraftModel::measure_threads(ThreadPools & pools, std::span<const int32_t> candidates) {
    return calibrate_threads(ctx_.get(), pools, kv_, filler_, candidates);
}

void DraftModel::use_threads(ThreadPools & pools, const ThreadChoice & choice) {
    pools.attach(ctx_.get(), choice.n_threads, choice.n_threads_batch);
}

std::optional<cache::SeqState> DraftModel::save_state(size_t max_bytes) {
    if (base_ != 0) return std::nullopt;
    return kv_.save(max_bytes);
}

void DraftModel::restore_state(const cache::SeqState & state) {
    base_ = 0;
    kv_.restore(state, state.tokens.size()); // empty when it does not fit
}

void DraftModel::begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel) {
    sampler_        = std::make_unique<Sampler>(*model_, sampling, "", /*penalties=*/false);
    cancel_         = cancel;
    first_proposal_ = true;
}

bool DraftModel::decode() {
    if (cancel_ && cancel_->load()) return false;
    if (llama_decode(ctx_.get(), batch_.get()) == 0) return true;
    kv_.clear(); // a failed decode may have written part of the batch
    base_ = 0;
    return false;
}

spec::Proposal DraftModel::propose(const spec::DraftRequest & req) {
    const std::span<const spec::token_id> history = req.history;
    const int                             k       = req.k;
    spec::Proposal                        out;
    if (k <= 0 || history.empty() || !sampler_) return out;
    Sampler & sampler = *sampler_;

    // Bring the cache to `history` minus its last token, then decode that token for logits.
    // The cache holds history[base_ ...] at positions counted from 0.
    size_t common = 0;
    if (base_ + 1 < history.size()) common = kv_.common_prefix(history.subspan(base_, history.size() - 1 - base_));
    if (common == 0) base_ = 0; // nothing reusable: a new prompt, or the target shifted
    const size_t gap = history.size() - (base_ + common);
    if (!first_proposal_ && gap > k_rewindow_gap) {
        // The draft sat out a long stretch (depth 0, probes far apart): catching up would
        // cost a draft step per missed token, so restart it on the recent tokens only. Any
        // draft is exact under verification; only its acceptance depends on its context.
        base_  = history.size() - k_window;
        common = 0;
    }
    if (common == 0 || !kv_.keep(common)) kv_.clear();
    first_proposal_ = false;

    int32_t idx = -1;
    for (size_t i = base_ + kv_.size(); i < history.size();) {
        batch_.clear();
        const size_t from = i;
        for (; i < history.size() && batch_.size() < batch_.capacity(); ++i) {
            // The draft has no projector: an image's positions hold a filler token, so the
            // text after the image keeps its positions (and the draft its context).
            const llama_token t = history[i] < 0 ? filler_ : history[i];
            idx = batch_.add(t, kv_.next_pos() + static_cast<llama_pos>(i - from), kv_.id(), i + 1 == history.size());
        }
        if (!decode()) return out;
        kv_.appended(history.subspan(from, i - from));
    }

    sampler.set_constraint(req.constraint ? std::make_unique<grammar::Constraint>(req.constraint->clone()) : nullptr);
    for (int j = 0; j < k; ++j) {
        spec::TokenDist   q = sampler.distribution(ctx_.get(), idx);
        const llama_token t = sampler.greedy() ? q.ids[0] : spec::seeded_draw(q, req.seed, req.first_index + j);
        if (model_->is_eog(t)) break; // the target decides where the answer ends
        if (j + 1 < k) sampler.accept(t); // the grammar copy follows the draft
        out.tokens.push_back(t);
        out.dists.push_back(std::move(q));
        if (j + 1 == k) break;
        batch_.clear();
        idx = batch_.add(t, kv_.next_pos(), kv_.id(), true);
        if (!decode()) break;
        kv_.appended(t);
    }
    return out;
}

} // namespace specd::engine
