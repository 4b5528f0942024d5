#include "engine/head_draft.h"

#include "engine/grammar_constraint.h"
#include "spec/seeded_draw.h"

#include <algorithm>
#include <cstring>

namespace specd::engine {

namespace {

// One job's way through propose_together's decodes.
struct Lane {
    HeadJob *                job;
    std::vector<llama_token> pending; // to read in order: the row's token, forced ones, then drafts
    std::vector<float>       row;     // the hidden state the next pending token is read with
    size_t                   fed  = 0;
    int32_t                  idx  = -1; // its batch index in the decode running, -1: none
    bool                     done = false;
};

} // namespace

HeadDraft::HeadDraft(std::shared_ptr<HeadContext> ctx, llama_seq_id seq) : ctx_(std::move(ctx)), seq_(seq) {}

void HeadDraft::begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel) {
    sampler_ = std::make_unique<Sampler>(ctx_->model(), sampling, "", /*penalties=*/false);
    cancel_  = cancel;
    has_row_ = false;
}

void HeadDraft::take_row(llama_context * target_ctx, int32_t idx, const KvSequence & kv) {
    const float * row = target_hidden_row(target_ctx, idx);
    has_row_          = row != nullptr;
    if (!has_row_) return;
    row_.assign(row, row + ctx_->n_embd());
    row_at_ = kv.size();
    pos_    = kv.next_pos();
}

void HeadDraft::propose_together(std::span<HeadJob> jobs) {
    if (jobs.empty()) return;
    HeadContext &     hc = *jobs.front().head->ctx_;
    std::vector<Lane> lanes;
    for (HeadJob & job : jobs) {
        HeadDraft & h = *job.head;
        if (h.ctx_.get() != &hc) throw std::logic_error("propose_together: the jobs' heads share no context");
        const auto & history = job.req.history;
        if (job.req.k <= 0 || !h.has_row_ || !h.sampler_ || h.cancelled() || history.size() <= h.row_at_) continue;
        Lane l{.job = &job, .pending = {history.begin() + std::ptrdiff_t(h.row_at_), history.end()}, .row = h.row_};
        // An image position has no token to read; the row is stale then anyway.
        if (std::any_of(l.pending.begin(), l.pending.end(), [](llama_token t) { return t < 0; })) continue;
        h.sampler_->set_constraint(job.req.constraint ? std::make_unique<GrammarConstraint>(job.req.constraint->clone())
                                                      : nullptr);
        lanes.push_back(std::move(l));
    }

    for (;;) {
        // One token per lane and decode: each reads the hidden state the one before produced.
        hc.clear();
        for (Lane & l : lanes) {
            l.idx = -1;
            if (l.done) continue;
            HeadDraft & h = *l.job->head;
            if (h.cancelled() || hc.size() >= hc.capacity()) {
                l.done = true;
                continue;
            }
            // Every token of a draft sits at the target's next position: the head attends to
            // the target's cache, which holds what comes before it and nothing of the draft.
            l.idx = hc.add(l.pending[l.fed], h.pos_, h.seq_, l.row.data());
        }
        if (hc.size() == 0) return;
        const bool ok = hc.decode();
        for (Lane & l : lanes) {
            if (l.idx < 0) continue;
            const float * next_row = ok ? hc.hidden_row(l.idx) : nullptr;
            if (!next_row) {
                l.done = true;
                continue;
            }
            l.row.assign(next_row, next_row + hc.n_embd());
            if (++l.fed < l.pending.size()) continue; // a forced token: read, not drafted
            HeadDraft &      h   = *l.job->head;
            spec::Proposal & out = l.job->out;
            const auto &     req = l.job->req;
            const int        j   = static_cast<int>(out.tokens.size());
            spec::TokenDist  q   = h.sampler_->distribution(hc.get(), l.idx);
            const llama_token t  = h.sampler_->greedy() ? q.ids[0] : spec::seeded_draw(q, req.seed, req.first_index + j);
            if (hc.model().is_eog(t)) { // the target decides where the answer ends
                l.done = true;
                continue;
            }
            out.tokens.push_back(t);
            out.dists.push_back(std::move(q));
            if (j + 1 >= req.k) {
                l.done = true;
                continue;
            }
            h.sampler_->accept(t); // the grammar copy follows the draft
            l.pending.push_back(t);
        }
    }
}

} // namespace specd::engine
