#include "engine/head_draft.h"

#include "engine/clock.h"
#include "engine/grammar_constraint.h"
#include "engine/projector.h"
#include "spec/seeded_draw.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace specd::engine {

// One job's way through propose_together's decodes.
struct HeadDraft::Lane {
    HeadJob *                job;
    std::vector<llama_token> pending; // to read in order: the row's token, forced ones, then drafts
    std::vector<float>       row;     // the hidden state the next pending token is read with
    bool                     from_target = true; // row is the target's (the first), not the head's
    llama_pos                pos  = 0; // where the next pending token is read
    size_t                   fed  = 0;
    int32_t                  masks = 0; // DFlash: the positions its block drafts
    int32_t                  idx  = -1; // its batch index in the decode running, -1: none
    bool                     done = false;
};

HeadDraft::HeadDraft(std::shared_ptr<HeadContext> ctx, llama_seq_id seq) : ctx_(std::move(ctx)), seq_(seq) {}

void HeadDraft::begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel) {
    sampler_ = std::make_unique<Sampler>(ctx_->model(), sampling, "", /*penalties=*/false);
    cancel_  = cancel;
    has_row_ = false;
    restored_end_.reset();
}

size_t HeadDraft::begin_prompt(KvSequence & kv, size_t common, bool in_place, bool feeds,
                               std::span<const llama_token> prompt) {
    const std::optional<llama_pos> restored = std::exchange(restored_end_, std::nullopt);
    if (!ctx_->own_cache()) return common;
    if (!feeds || !(in_place || restored) || common == 0 || is_image_token(prompt[common - 1])) {
        forget();
        return common;
    }
    // DFlash's cache holds every kept position's features already. Any other's pair at the
    // last kept token's position waits for that token's row, which only a decode gives:
    // decode it again; the head's cache keeps what comes before it.
    const bool   dflash = ctx_->kind() == DraftKind::dflash;
    const size_t keep   = dflash ? common : common - 1;
    if (!kv.keep(keep)) { // the prefix cannot be continued (KvSequence::window_held): start over
        forget();
        return 0;
    }
    // A restored cache that ends short of them would leave a gap: start over instead.
    if (!in_place && *restored < kv.next_pos()) {
        forget();
        return keep;
    }
    ctx_->trim(seq_, kv.next_pos());
    return keep;
}

std::optional<cache::SeqState> HeadDraft::save_state(const KvSequence & kv, size_t max_bytes) {
    if (!ctx_->own_cache() || kv.size() == 0) return std::nullopt;
    // Its pairs of kv's tokens end before the last one's position (that pair waits for the
    // token after it); DFlash's features reach kv's end.
    const llama_pos end = ctx_->kind() == DraftKind::dflash ? kv.next_pos() : kv.next_pos() - 1;
    cut(end);
    if (!backlog_pos_.empty()) {
        ctx_->clear();
        bool ok = flush_backlog();
        if (ctx_->size() > 0) ok = ctx_->decode(/*drafting=*/false) && ok;
        ctx_->clear();
        if (!ok) {
            forget();
            return std::nullopt;
        }
    }
    if (ctx_->seq_end(seq_) < end) return std::nullopt;
    auto bytes = ctx_->save_seq(seq_, max_bytes);
    if (!bytes) return std::nullopt;
    cache::SeqState s;
    s.tokens   = kv.tokens();
    s.bytes    = std::move(*bytes);
    s.next_pos = end;
    return s;
}

void HeadDraft::restore_state(const cache::SeqState & state) {
    forget();
    if (ctx_->restore_seq(seq_, state.bytes)) restored_end_ = state.next_pos;
}

void HeadDraft::forget() {
    ctx_->forget(seq_);
    keep_backlog(0);
    prompt_waits_ = false;
    catching_up_  = false;
    has_row_      = false;
}

void HeadDraft::keep_backlog(size_t n) {
    backlog_tokens_.resize(n);
    backlog_pos_.resize(n);
    backlog_rows_.resize(n * size_t(ctx_->row_width()));
}

void HeadDraft::cut(llama_pos from) {
    size_t keep = 0;
    while (keep < backlog_pos_.size() && backlog_pos_[keep] < from) ++keep;
    keep_backlog(keep);
    if (keep == 0) {
        ctx_->trim(seq_, from); // the cache ends before the backlog began
    } else if (backlog_pos_.back() + 1 < from) {
        ctx_->forget(seq_);
        keep_backlog(0);
    }
}

bool HeadDraft::flush_backlog() {
    if (!prompt_waits_) trim_backlog(backlog_window());
    bool         ok = true;
    const size_t w  = size_t(ctx_->row_width());
    for (size_t i = 0; i < backlog_pos_.size(); ++i) {
        ok = ctx_->feed_pair(backlog_tokens_[i], backlog_pos_[i], seq_, backlog_rows_.data() + i * w) && ok;
    }
    keep_backlog(0);
    catching_up_ = false;
    return ok;
}

bool HeadDraft::feed(const llama_batch & batch, int32_t first, int32_t n, Pairs how) {
    HeadContext & hc = *ctx_;
    if (!hc.own_cache() || n <= 0) return true;
    const bool defer = how != Pairs::now;
    if (how == Pairs::round) prompt_waits_ = false; // the first round: the prompt's pairs are a round's now
    if (how == Pairs::prompt) prompt_waits_ = true;
    const llama_pos p0 = batch.pos[first];
    // The pair the last row waited for: its token is this part's first. DFlash reads each
    // position's own features, so nothing waits.
    const bool dflash = hc.kind() == DraftKind::dflash;
    const bool bridge = !dflash && has_row_ && pos_ == p0 && p0 > 0;
    cut(bridge ? p0 - 1 : p0);
    // Pairs still waiting from before this part: a round went by without a draft reading them.
    const bool waited = !backlog_pos_.empty();
    bool       ok     = defer || flush_backlog();
    const auto pair = [&](llama_token token, llama_pos pos, const float * row) {
        if (!defer) {
            ok = hc.feed_pair(token, pos, seq_, row) && ok;
            return;
        }
        backlog_tokens_.push_back(token);
        backlog_pos_.push_back(pos);
        backlog_rows_.insert(backlog_rows_.end(), row, row + hc.row_width());
    };
    if (bridge) pair(batch.token[first], p0 - 1, row_.data());
    if (dflash) {
        for (int32_t k = first; k < first + n; ++k) {
            const float * features = hc.target_row(k);
            if (!features) break;
            pair(batch.token[k], batch.pos[k], features);
        }
    } else {
        for (int32_t k = first; k + 1 < first + n; ++k) {
            const float * g = hc.target_row(k);
            if (!g) break;
            pair(batch.token[k + 1], batch.pos[k], g);
        }
    }
    if (defer && (how == Pairs::prompt || waited) && !backlog_pos_.empty()) catching_up_ = true;
    // Trimmed when it holds twice the window, not at every pair: a pair's row is 9 KB
    // (EAGLE3's features of a 768-wide target), and flush_backlog trims it to the window.
    if (how == Pairs::round && backlog_pos_.size() > 2 * backlog_window()) trim_backlog(backlog_window());
    // A long prompt's pairs go into the batch as they come, all of them.
    if (how == Pairs::prompt && backlog_pos_.size() > k_prompt_wait) ok = flush_backlog() && ok;
    return ok;
}

// A request parked at depth 0 keeps reading pairs, and the round that drafts again (a probe,
// most of the time) decodes them all first: 120 waiting pairs made such a round ~60 ms dearer
// than the 20 ms step of a 768-wide target on 2 cores (an EAGLE3 head at agreement 0.6). Only
// the most recent pairs wait; the head then drafts from those alone (its cache starts over),
// as it does after an image, and its context grows again while it drafts.
size_t HeadDraft::backlog_window() const {
    return std::min<size_t>(k_backlog_max, size_t(std::max(1, ctx_->capacity() / 4)));
}

void HeadDraft::trim_backlog(size_t most) {
    if (backlog_pos_.size() <= most) return;
    const size_t drop = backlog_pos_.size() - most;
    const size_t w    = size_t(ctx_->row_width());
    ctx_->forget(seq_); // what it holds no longer abuts the pairs kept
    backlog_tokens_.erase(backlog_tokens_.begin(), backlog_tokens_.begin() + std::ptrdiff_t(drop));
    backlog_pos_.erase(backlog_pos_.begin(), backlog_pos_.begin() + std::ptrdiff_t(drop));
    backlog_rows_.erase(backlog_rows_.begin(), backlog_rows_.begin() + std::ptrdiff_t(drop * w));
}

void HeadDraft::take_row(int32_t idx, const KvSequence & kv) {
    const float * row = ctx_->target_row(idx);
    has_row_          = row != nullptr;
    if (!has_row_) return;
    row_.assign(row, row + ctx_->row_width());
    row_at_ = kv.size();
    pos_    = kv.next_pos();
}

void HeadDraft::propose_blocks(HeadContext & hc, std::vector<Lane> & lanes) {
    // Each lane's block: the tokens after the row (the row's token, then forced ones) and a
    // mask at every position to draft, read in one decode; blocks go whole into decodes of
    // at most a micro-batch, since a block's positions see each other.
    const int32_t ubatch = int32_t(llama_n_ubatch(hc.get()));
    size_t        next   = 0;
    while (next < lanes.size()) {
        hc.clear();
        std::vector<Lane *> in;
        for (; next < lanes.size(); ++next) {
            Lane &        l     = lanes[next];
            HeadDraft &   h     = *l.job->head;
            const int32_t n_pre = int32_t(l.pending.size());
            const int32_t k     = std::min({l.job->req.k, hc.block_drafts(), ubatch - n_pre});
            if (h.cancelled() || k <= 0) continue;
            if (hc.size() + n_pre + k > std::min(ubatch, hc.capacity())) break;
            l.idx = hc.size() + n_pre; // its first drafted position's batch index
            // Every block token is an output, the read ones too: DFlash's graph in the pinned
            // llama.cpp computes logits for every token without selecting the outputs, and
            // libllama takes its first n_outputs rows as theirs, so with fewer outputs than
            // tokens the masks of a second block read the rows of the block before (measured:
            // HeadDraftTest's proposals together differed from alone). llama.cpp's own DFlash
            // drafter outputs all of them too.
            for (int32_t i = 0; i < n_pre; ++i) hc.add(l.pending[size_t(i)], l.pos + i, h.seq_, nullptr, true);
            for (int32_t i = 0; i < k; ++i) hc.add(hc.mask_token(), l.pos + n_pre + i, h.seq_, nullptr, true);
            l.masks = k;
            in.push_back(&l);
        }
        if (in.empty()) {
            if (next < lanes.size()) ++next; // a block no decode holds
            continue;
        }
        const bool ok = hc.decode();
        for (Lane * l : in) {
            HeadDraft & h = *l->job->head;
            // The block is not the sequence's: what it wrote goes before the next feed.
            hc.trim(h.seq_, l->pos);
            if (!ok) continue;
            spec::Proposal & out = l->job->out;
            const auto &     req = l->job->req;
            for (int32_t i = 0; i < l->masks; ++i) {
                const int         j = static_cast<int>(out.tokens.size());
                spec::TokenDist   q = h.sampler_->distribution(hc.get(), l->idx + i);
                const llama_token t = h.sampler_->greedy() ? q.ids[0] : spec::seeded_draw(q, req.seed, req.first_index + j);
                if (hc.model().is_eog(t)) break; // the target decides where the answer ends
                out.tokens.push_back(t);
                out.dists.push_back(std::move(q));
                h.sampler_->accept(t); // the grammar copy follows the draft
            }
        }
    }
}

int64_t HeadDraft::propose_together(std::span<HeadJob> jobs) {
    if (jobs.empty()) return 0;
    HeadContext &     hc = *jobs.front().head->ctx_;
    std::vector<Lane> lanes;
    for (HeadJob & job : jobs) {
        HeadDraft & h = *job.head;
        if (h.ctx_.get() != &hc) throw std::logic_error("propose_together: the jobs' heads share no context");
        const auto & history = job.req.history;
        if (job.req.k <= 0 || !h.has_row_ || !h.sampler_ || h.cancelled() || history.size() <= h.row_at_) continue;
        // gemma4's assistant reads every token of a draft at the target's next position: it
        // attends to the target's cache, which holds what comes before it and nothing of the
        // draft. EAGLE3 reads the row's token at the row's position and each next one a
        // position further, in a cache of its own that ends right before. DFlash's block
        // starts with the row's token at its own position.
        const bool      shifted = hc.own_cache() && hc.kind() != DraftKind::dflash;
        const llama_pos start   = shifted ? h.pos_ - 1 : h.pos_;
        Lane l{.job = &job, .pending = {history.begin() + std::ptrdiff_t(h.row_at_), history.end()}, .row = h.row_,
               .pos = start};
        // An image position has no token to read; the row is stale then anyway.
        if (std::any_of(l.pending.begin(), l.pending.end(), [](llama_token t) { return t < 0; })) continue;
        h.sampler_->set_constraint(job.req.constraint ? std::make_unique<GrammarConstraint>(job.req.constraint->clone())
                                                      : nullptr);
        lanes.push_back(std::move(l));
    }
    // A head with its own cache: each sequence's cache ends right before its draft's first
    // position, and the pairs waiting (every round's and a prompt's: the session defers them
    // all) are decoded first. EAGLE3's and an MTP layer's go into the batch of the first draft
    // tokens: one decode fewer per step. Every token of that batch is an output, but the rows
    // of logits cost less than a decode of its own: a 768-wide EAGLE3 head on 2 cores took
    // 8.4 ms for a pair and a draft token together against 15.5 ms apart, 40 ms against 46
    // for 32 pairs, and about the same for 64. DFlash drafts a block of its own after them.
    // Sequences catching up (catching_up_, k_catch_up_apart pairs or more) decode their pairs
    // first, in a decode of their own.
    bool    carried     = false; // the batch holds the pairs when the draft loop starts
    int64_t catch_up_ns = 0;
    if (hc.own_cache() && !lanes.empty()) {
        hc.clear();
        bool ok = true;
        for (Lane & l : lanes) {
            HeadDraft & h = *l.job->head;
            h.cut(l.pos);
            if (h.catching_up_ && h.backlog_pos_.size() >= k_catch_up_apart) ok = h.flush_backlog() && ok;
        }
        if (hc.size() > 0) {
            const int64_t t0 = now_ns();
            ok               = hc.decode(/*drafting=*/false) && ok;
            catch_up_ns      = now_ns() - t0;
            hc.clear();
        }
        for (Lane & l : lanes) ok = l.job->head->flush_backlog() && ok;
        const bool merge = hc.kind() != DraftKind::dflash && hc.size() + int32_t(lanes.size()) <= hc.capacity();
        if (hc.size() > 0 && !merge) ok = hc.decode(/*drafting=*/false) && ok;
        if (!ok) {
            for (Lane & l : lanes) hc.forget(l.job->head->seq_);
        }
        carried = merge && ok && hc.size() > 0;
        if (carried) hc.output_all();
        else hc.clear();
    }
    if (hc.kind() == DraftKind::dflash) {
        propose_blocks(hc, lanes);
        return catch_up_ns;
    }

    for (;;) {
        // One token per lane and decode: each reads the hidden state the one before produced.
        const bool with_pairs = carried;
        if (!carried) hc.clear();
        carried = false;
        for (Lane & l : lanes) {
            l.idx = -1;
            if (l.done) continue;
            HeadDraft & h = *l.job->head;
            if (h.cancelled() || hc.size() >= hc.capacity()) {
                l.done = true;
                continue;
            }
            l.idx = hc.add(l.pending[l.fed], l.pos, h.seq_, l.row.data(), /*output=*/true, l.from_target);
            if (hc.own_cache()) ++l.pos;
        }
        if (hc.size() == 0) return catch_up_ns;
        const bool ok = hc.decode();
        if (!ok && with_pairs) {
            // What the caches hold of the pairs is unknown now: the sequences start over.
            for (Lane & l : lanes) hc.forget(l.job->head->seq_);
        }
        for (Lane & l : lanes) {
            if (l.idx < 0) continue;
            const float * next_row = ok ? hc.hidden_row(l.idx) : nullptr;
            if (!next_row) {
                l.done = true;
                continue;
            }
            l.row.assign(next_row, next_row + hc.n_embd());
            l.from_target = false;
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
