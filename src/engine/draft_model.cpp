#include "engine/draft_model.h"

#include "engine/grammar_constraint.h"

#include <algorithm>

namespace specd::engine {

namespace {

// After a gap longer than this (tokens the draft did not see), the draft restarts on the
// last k_window tokens instead of catching up. The first proposal of a request always syncs
// in full, so the draft starts from the whole prompt.
constexpr size_t k_rewindow_gap = 48;
constexpr size_t k_window       = 16;

// One job's way through propose_together's decodes.
struct Lane {
    DraftJob *               job;
    std::vector<llama_token> pending;        // to decode in order: unseen history, then drafts
    size_t                   fed        = 0; // of `pending`, decoded
    size_t                   n_in_batch = 0; // of `pending`, in the batch being decoded
    int32_t                  idx        = -1; // the batch index of its logits, -1: none this time
    bool                     done       = false;
};

} // namespace

DraftModel::DraftModel(std::shared_ptr<DraftContext> ctx, llama_seq_id seq) :
    ctx_(std::move(ctx)), kv_(ctx_->get(), seq) {}

std::optional<ThreadChoice> DraftModel::measure_threads(ThreadPools & pools, std::span<const int32_t> candidates) {
    return calibrate_threads(ctx_->get(), pools, kv_, ctx_->filler(), candidates);
}

std::optional<cache::SeqState> DraftModel::save_state(const KvSequence &, size_t max_bytes) {
    if (base_ != 0) return std::nullopt;
    return kv_.save(max_bytes);
}

void DraftModel::restore_state(const cache::SeqState & state) {
    base_ = 0;
    kv_.restore(state, state.tokens.size()); // empty when it does not fit
}

void DraftModel::begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel) {
    sampler_        = std::make_unique<Sampler>(ctx_->model(), sampling, "", /*penalties=*/false);
    cancel_         = cancel;
    first_proposal_ = true;
}

void DraftModel::reset() {
    kv_.clear();
    base_ = 0;
}

std::vector<llama_token> DraftModel::catch_up(std::span<const spec::token_id> history) {
    // The draft cannot see images: their positions would be fillers to it, hundreds of them
    // per image, each a draft step to read (on a first proposal or a probe after depth 0 they
    // cost more than the round). Its context starts after the last image instead.
    size_t after_image = 0;
    for (size_t i = history.size(); i-- > 0;) {
        if (history[i] < 0) {
            after_image = i + 1;
            break;
        }
    }
    if (after_image >= history.size()) return {}; // nothing but images yet: nothing to draft from
    if (base_ < after_image) {
        base_ = after_image;
        kv_.clear();
    }
    // The cache holds history[base_ ...] at positions counted from 0; it is brought to
    // `history` minus its last token, which is decoded in any case for its logits.
    size_t common = 0;
    if (base_ + 1 < history.size()) common = kv_.common_prefix(history.subspan(base_, history.size() - 1 - base_));
    if (common == 0) base_ = after_image; // nothing reusable: a new prompt, or the target shifted
    const size_t gap = history.size() - (base_ + common);
    if (!first_proposal_ && gap > k_rewindow_gap) {
        // The draft sat out a long stretch (depth 0, probes far apart): catching up would
        // cost a draft step per missed token, so restart it on the recent tokens only. Any
        // draft is exact under verification; only its acceptance depends on its context.
        base_  = std::max(after_image, history.size() - k_window);
        common = 0;
    }
    if (common == 0 || !kv_.keep(common)) kv_.clear();
    first_proposal_ = false;

    std::vector<llama_token> unseen;
    for (size_t i = base_ + kv_.size(); i < history.size(); ++i) {
        unseen.push_back(history[i] < 0 ? ctx_->filler() : history[i]); // image positions
    }
    return unseen;
}

bool DraftModel::draw(int32_t idx, const spec::DraftRequest & req, spec::Proposal & out,
                      std::vector<llama_token> & pending) {
    Sampler &         sampler = *sampler_;
    const int         j       = static_cast<int>(out.tokens.size());
    spec::TokenDist   q       = sampler.distribution(ctx_->get(), idx);
    const llama_token t       = sampler.greedy() ? q.ids[0] : spec::seeded_draw(q, req.seed, req.first_index + j);
    if (ctx_->model().is_eog(t)) return false; // the target decides where the answer ends
    out.tokens.push_back(t);
    out.dists.push_back(std::move(q));
    if (j + 1 >= req.k) return false;
    sampler.accept(t); // the grammar copy follows the draft
    pending.push_back(t);
    return true;
}

void DraftModel::propose_together(std::span<DraftJob> jobs) {
    if (jobs.empty()) return;
    DraftContext &    dc = *jobs.front().draft->ctx_;
    std::vector<Lane> lanes;
    for (DraftJob & job : jobs) {
        DraftModel & d = *job.draft;
        if (d.ctx_.get() != &dc) throw std::logic_error("propose_together: the jobs' drafts share no context");
        if (job.req.k <= 0 || job.req.history.empty() || !d.sampler_ || d.cancelled()) continue;
        lanes.push_back({.job = &job, .pending = d.catch_up(job.req.history)});
        d.sampler_->set_constraint(job.req.constraint
                                       ? std::make_unique<GrammarConstraint>(job.req.constraint->clone())
                                       : nullptr);
    }

    Batch & batch = dc.batch();
    for (;;) {
        // Every lane's next tokens, in turn, as many as the batch holds; a lane asks for
        // logits only at its last pending token (the rest of a long catch-up goes first).
        batch.clear();
        for (Lane & l : lanes) {
            l.n_in_batch = 0;
            l.idx        = -1;
            if (l.done) continue;
            DraftModel & d = *l.job->draft;
            if (d.cancelled()) {
                l.done = true;
                continue;
            }
            while (l.fed + l.n_in_batch < l.pending.size() && batch.size() < batch.capacity()) {
                const size_t  i    = l.fed + l.n_in_batch;
                const bool    last = i + 1 == l.pending.size();
                const int32_t idx  = batch.add(l.pending[i], d.kv_.next_pos() + static_cast<llama_pos>(l.n_in_batch),
                                               d.kv_.id(), last);
                if (last) l.idx = idx;
                ++l.n_in_batch;
            }
        }
        if (batch.size() == 0) return;
        const bool ok = dc.decode();
        for (Lane & l : lanes) {
            if (l.n_in_batch == 0) continue;
            DraftModel & d = *l.job->draft;
            if (!ok) { // a failed decode may have written part of the batch: start over
                d.reset();
                l.done = true;
                continue;
            }
            d.kv_.appended(std::span(l.pending).subspan(l.fed, l.n_in_batch));
            l.fed += l.n_in_batch;
            if (l.idx >= 0) l.done = !d.draw(l.idx, l.job->req, l.job->out, l.pending);
        }
    }
}

} // namespace specd::engine
