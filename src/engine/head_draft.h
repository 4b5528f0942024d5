#pragma once
// One sequence of a draft head (engine/head_context): what it proposes for one of the
// session's sequences. The head's input is the token it continues and the row of the target
// that chose that token (gemma4's assistant: the target's hidden state; EAGLE3: three of its
// layers' inputs, which the head's encoder reads), so after every target decode the sequence
// takes that row (take_row); its drafts then run on the head alone, each step's own hidden
// state feeding the next.
//
// gemma4's assistant keeps no KV of its own (it reads the target's), so a sequence holds one
// row and nothing else: the prompt cache restores the target's state, and the prompt's last
// token, which is always decoded again, gives the row back. EAGLE3's cache is its own: after
// every target decode the sequence feeds it the pairs of the tokens decoded (the token at P+1
// with the row of P; the last one waits for the token that follows it, as the "bridge"
// before the next part, or as the first token of the next draft). The prompt cache saves it
// beside the target's state (save_state); a prompt whose prefix the sequence still holds in
// place, or that such a state brought back, keeps it (the last kept token is decoded again, to
// give its row), any other starts it over, and the head then attends to the prompt's new part
// only; after an image or a context shift likewise. A request that does not draft does not
// feed it (and starts it over).
//
// DFlash's cache is its own too, fed each decoded position's features; it drafts a block at
// once (the row's token, then a mask at every position to draft) and keeps nothing of it.
//
// The sequences that draft in one step propose together: one head decode per draft position
// for all of them (DFlash: one decode for all their blocks).
#include "core/options.h"
#include "engine/companion_state.h"
#include "engine/head_context.h"
#include "engine/kv_sequence.h"
#include "engine/sampler.h"
#include "spec/drafter.h"

#include <atomic>
#include <memory>
#include <span>
#include <vector>

namespace specd::engine {

class HeadDraft;

// One sequence's part of a proposal made together: what it is asked for, and its answer.
struct HeadJob {
    HeadDraft *        head = nullptr;
    spec::DraftRequest req;
    spec::Proposal     out;
};

class HeadDraft : public CompanionState {
  public:
    // Pairs a sequence that drafted nothing for a while (feed's Pairs::round) decodes when it
    // drafts again, at most.
    static constexpr size_t k_backlog_max = 32;
    // A prompt's pairs that wait for the sequence's first round (Pairs::prompt), at most: a
    // longer prompt's are decoded as they come, all but the last ones. The bound keeps the
    // waiting rows small (64 pairs of EAGLE3's features of a 4096-wide target are 3 MiB).
    static constexpr size_t k_prompt_wait = 64;
    // A sequence catching up with at least this many waiting pairs decodes them apart from its
    // draft (timed as catching up); fewer go with the draft's first token, charged to it. A
    // decode of its own costs its fixed part again (about 6 ms of a 768-wide EAGLE3 head on 2
    // cores, against about 1 ms per pair): worth it only where the pairs would distort what a
    // draft costs by more than that.
    static constexpr size_t k_catch_up_apart = 8;

    // How feed's pairs reach the head's cache.
    enum class Pairs {
        now,    // into the context's batch at once (its caller decodes it)
        // A prompt's: they wait, whole, for the sequence's first round, which decodes them if it
        // drafts; a round that does not (the drafting gate said no, the request starts parked)
        // leaves them waiting as a round's. So a request that never drafts costs no head decode
        // for its prompt.
        prompt,
        // A round's: they wait for the sequence's next draft, which decodes them with its first
        // tokens (a round costs no head decode of its own); a sequence that drafts nothing for
        // a while keeps only its most recent ones (trim_backlog).
        round,
    };

    // Sequence `seq` of `ctx` (the target's sequence of the same id).
    HeadDraft(std::shared_ptr<HeadContext> ctx, llama_seq_id seq);

    // Per request: how the head samples (the target's options without penalties) and the
    // flag that cancels it. Forgets the row of an earlier request.
    void begin_request(const SamplingOptions & sampling, const std::atomic<bool> * cancel);

    // Before a prompt is read: the target kept `common` of its tokens (`in_place`: this
    // sequence's own, not a state restored from the prompt cache), and the request will feed
    // the head (`feeds`: it may draft). A head with its own cache keeps its pairs of them (its
    // own, or those restore_state brought back with the target's state when they reach as
    // far) and otherwise starts over. Returns how many of them the target keeps now: one
    // fewer for a head with its own cache, which needs the last kept token's row again.
    size_t begin_prompt(KvSequence & kv, size_t common, bool in_place, bool feeds, std::span<const llama_token> prompt);

    // The prompt cache's copy of the head's own cache beside the target's `kv`: its pairs of
    // kv's tokens (those still waiting decoded first); nullopt for a head without a cache of
    // its own, or one that does not reach kv's end.
    std::optional<cache::SeqState> save_state(const KvSequence & kv, size_t max_bytes) override;
    void                           restore_state(const cache::SeqState & state) override;
    // The target's cache was shifted, or a feed failed: a head with its own cache starts over.
    void   forget();

    // After a decode of the target, before its logits are read: this sequence's tokens were
    // at indices [first, first + n) of `batch`. A head with its own cache takes their pairs
    // (after HeadContext::after_target_decode) as `how` says: into its context's batch, which
    // the caller then decodes for all sequences at once (HeadContext::decode(false)), or into
    // the sequence's backlog, decoded with the next pairs fed now or with the next draft's
    // first tokens. Others need nothing. false when a decode of a full batch failed.
    bool feed(const llama_batch & batch, int32_t first, int32_t n, Pairs how = Pairs::now);
    // Then: the target's row at batch index `idx` chose the token that follows what `kv` now
    // holds.
    void take_row(int32_t idx, const KvSequence & kv);

    // Up to each job's `req.k` tokens continuing its `req.history`: the tokens after the row
    // (the last committed one, then any forced ones) are read first, then one decode per
    // draft position for every job. No row for the history (the sequence was not decoded
    // since, or the context shifted) is an empty proposal, as are a cancelled request and a
    // failed decode. Each job samples under a copy of its constraint when it has one, with the
    // request's seeded noise above temperature 0 (spec/seeded_draw).
    // Returns the nanoseconds spent catching up: decoding the pairs of sequences that drafted
    // nothing for rounds, or wait with a prompt's, k_catch_up_apart of them or more (see
    // catching_up_). Not part of what the drafts cost: a round that drafts after drafting
    // pays none of it.
    static int64_t propose_together(std::span<HeadJob> jobs);

    DraftKind kind() const { return ctx_->kind(); }

  private:
    struct Lane;
    // DFlash: every lane's block in one decode (or as few as its micro-batches allow).
    static void propose_blocks(HeadContext & hc, std::vector<Lane> & lanes);

    bool cancelled() const { return cancel_ && cancel_->load(); }
    // The sequence's pairs (its cache, then its backlog) end right before `from`: what is at
    // or after it goes; a gap before it (an image) starts both over.
    void cut(llama_pos from);
    // Adds the backlog to the context's batch, oldest first; false when a decode failed.
    bool flush_backlog();
    void keep_backlog(size_t n); // its first n pairs
    // The most pairs a draft decodes after a sequence was parked (k_backlog_max, or less in
    // a small context), and the backlog cut to its last `most` pairs (the cache forgotten
    // when any went: what it holds no longer abuts them).
    size_t backlog_window() const;
    void   trim_backlog(size_t most);


    std::shared_ptr<HeadContext> ctx_;
    llama_seq_id                 seq_;
    std::unique_ptr<Sampler>     sampler_;
    const std::atomic<bool> *    cancel_ = nullptr;
    std::vector<float>           row_;        // the target's row that chose history[row_at_]
    size_t                       row_at_ = 0;
    llama_pos                    pos_    = 0; // where the target's next token goes (the row's is pos_ - 1)
    bool                         has_row_ = false;
    // restore_state brought back pairs before this position, for the next begin_prompt.
    std::optional<llama_pos>     restored_end_;
    // Pairs fed but not decoded yet, in position order, each with its row.
    std::vector<llama_token>     backlog_tokens_;
    std::vector<llama_pos>       backlog_pos_;
    std::vector<float>           backlog_rows_;
    // The backlog holds a prompt's pairs, which are not trimmed (Pairs::prompt), until the
    // sequence's first round is fed.
    bool                         prompt_waits_ = false;
    // The backlog holds more than the last round's pairs (a prompt's, or those of rounds that
    // drafted nothing): the next draft catches up first, in a decode of its own, timed apart
    // (from k_catch_up_apart pairs). A sequence parked at depth 0 resumes with up to
    // k_backlog_max pairs: merged into its draft, that decode took 45-50 ms for one draft
    // token against 9 ms after a drafting round, and charged to the draft it made each resumed
    // round look five times dearer per token than drafting is (a request on 2 cores then
    // stayed parked, and its prior carried that cost into the model's next requests).
    bool                         catching_up_ = false;
};

} // namespace specd::engine
