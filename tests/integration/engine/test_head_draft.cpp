// Draft heads (gemma4's assistant, EAGLE3) drafting for several sequences together: a
// sequence drafts only from a row of the target it took after a target decode, each
// sequence's proposal together is what it proposes alone, and drafting together costs one head
// decode per position for all of them (the tokens after the row, forced ones included, are
// read one per decode too). EAGLE3's own cache holds the pairs of every token decoded.
#include "engine/context_factory.h"
#include "engine/head_draft.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <atomic>

using namespace specd;
using namespace specd::engine;

namespace {

constexpr uint32_t k_ctx = 512;

struct HeadFixture {
    const char * target;
    const char * head;
    DraftKind    kind;
};

void PrintTo(const HeadFixture & f, std::ostream * os) { *os << draft_kind_name(f.kind); }

const HeadFixture k_assistant{"gemma4-head-target.gguf", "gemma4-assistant.gguf", DraftKind::gemma4_assistant};
const HeadFixture k_eagle3{"eagle3-target.gguf", "eagle3-head.gguf", DraftKind::eagle3};
// The model's own MTP layer: the "head" is the model, loaded with its layer.
const HeadFixture k_mtp{"mtp.gguf", "mtp.gguf", DraftKind::mtp};
const HeadFixture k_dflash{"dflash-target.gguf", "dflash-head.gguf", DraftKind::dflash};

// The head decodes a proposal of `positions` tokens (read or drafted) takes: one per position,
// DFlash's block one in all.
int64_t decodes_for(const HeadFixture & f, int64_t positions) { return f.kind == DraftKind::dflash ? 1 : positions; }

std::shared_ptr<Model> target_of(const HeadFixture & f) {
    return f.kind == DraftKind::mtp ? fixtures::shared_mtp_model(f.target) : fixtures::shared_model(f.target);
}

// A fixture target with `n_seq` sequences, its head, and a prompt decoded on each (fed to the
// head as the session does after a decode).
struct Heads {
    std::shared_ptr<Model>                  target;
    CreatedContext                          tctx;
    std::shared_ptr<HeadContext>            ctx;
    std::vector<KvSequence>                 kv;
    std::vector<std::unique_ptr<HeadDraft>> seqs;
    std::vector<std::vector<llama_token>>   histories; // each prompt and the target's greedy token after it
    std::atomic<bool>                       cancel{false};

    Heads(const HeadFixture & f, const std::vector<std::string> & prompts, bool take_rows = true) :
        target(target_of(f)) {
        const int n_seq = static_cast<int>(prompts.size());
        tctx = create_context(*target, sequences_params(*target, k_ctx, n_seq, 256), "target");
        ctx  = std::make_shared<HeadContext>(f.kind == DraftKind::mtp ? target : fixtures::shared_model(f.head), f.kind,
                                            *target, tctx.ctx.get(), k_ctx, n_seq, 256);
        Batch batch(256, 1);
        std::vector<int32_t> first_idx, last_idx;
        for (int s = 0; s < n_seq; ++s) {
            kv.emplace_back(tctx.ctx.get(), s);
            histories.push_back(target->tokenize(prompts[size_t(s)], true, true));
            const auto & h = histories.back();
            first_idx.push_back(batch.size());
            for (size_t i = 0; i < h.size(); ++i) {
                const int32_t idx = batch.add(h[i], llama_pos(i), s, i + 1 == h.size());
                if (i + 1 == h.size()) last_idx.push_back(idx);
            }
        }
        if (llama_decode(tctx.ctx.get(), batch.get()) != 0) throw std::runtime_error("target decode failed");
        ctx->after_target_decode(batch.size());
        ctx->clear();
        for (int s = 0; s < n_seq; ++s) {
            kv[size_t(s)].appended(histories[size_t(s)]);
            const float * logits = llama_get_logits_ith(tctx.ctx.get(), last_idx[size_t(s)]);
            const int32_t n_vocab = llama_vocab_n_tokens(target->vocab());
            histories[size_t(s)].push_back(llama_token(std::max_element(logits, logits + n_vocab) - logits));
            seqs.push_back(std::make_unique<HeadDraft>(ctx, s));
            seqs.back()->begin_request(fixtures::greedy(1).sampling, &cancel);
            const int32_t n = int32_t(histories[size_t(s)].size()) - 1;
            if (take_rows) {
                seqs.back()->feed(batch.get(), first_idx[size_t(s)], n);
                seqs.back()->take_row(last_idx[size_t(s)], kv[size_t(s)]);
            }
        }
        if (ctx->size() > 0 && !ctx->decode(/*drafting=*/false)) throw std::runtime_error("head feed failed");
    }

    // The last position the head's own cache holds for sequence `s` (-1: none).
    llama_pos head_pos_max(int s) const { return llama_memory_seq_pos_max(llama_get_memory(ctx->get()), s); }
};

class HeadDraftTest : public ::testing::TestWithParam<HeadFixture> {};

const std::vector<std::string> k_prompts = {"Once upon a time", "one two three four", "the cat sat on the mat."};

} // namespace

TEST_P(HeadDraftTest, ProposalsTogetherAreTheProposalsAloneAtOneDecodePerPosition) {
    std::vector<spec::Proposal> alone;
    for (const std::string & p : k_prompts) {
        Heads                h(GetParam(), {p});
        std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
        HeadDraft::propose_together(job);
        EXPECT_EQ(h.ctx->decodes(), decodes_for(GetParam(), 4)) << p;
        alone.push_back(std::move(job[0].out));
    }
    Heads                h(GetParam(), k_prompts);
    std::vector<HeadJob> jobs;
    for (size_t s = 0; s < k_prompts.size(); ++s) jobs.push_back({.head = h.seqs[s].get(), .req = {.history = h.histories[s], .k = 4}});
    HeadDraft::propose_together(jobs);
    EXPECT_EQ(h.ctx->decodes(), decodes_for(GetParam(), 4)) << "one decode per position for all three sequences";
    for (size_t s = 0; s < k_prompts.size(); ++s) {
        EXPECT_EQ(jobs[s].out.tokens.size(), 4u) << k_prompts[s];
        EXPECT_EQ(jobs[s].out.tokens, alone[s].tokens) << k_prompts[s];
        EXPECT_EQ(jobs[s].out.dists.size(), jobs[s].out.tokens.size());
    }
}

TEST_P(HeadDraftTest, TokensAfterTheRowAreReadBeforeDrafting) {
    Heads h(GetParam(), {k_prompts[0], k_prompts[1]});
    // The second sequence's history goes on two tokens past its row (forced text): they are
    // read first, a decode each, then it drafts; the first drafts at once.
    std::vector<llama_token> longer = h.histories[1];
    longer.push_back(longer.back());
    longer.push_back(longer.front());
    std::vector<HeadJob> jobs{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 3}},
                              {.head = h.seqs[1].get(), .req = {.history = longer, .k = 3}}};
    HeadDraft::propose_together(jobs);
    EXPECT_EQ(jobs[0].out.tokens.size(), 3u);
    EXPECT_EQ(jobs[1].out.tokens.size(), 3u);
    EXPECT_EQ(h.ctx->decodes(), decodes_for(GetParam(), 5))
        << "2 reads + 3 drafts, the other sequence's drafts in the same decodes";
}

TEST_P(HeadDraftTest, NoRowNoProposal) {
    Heads                h(GetParam(), {k_prompts[0]}, /*take_rows=*/false);
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
    HeadDraft::propose_together(job);
    EXPECT_TRUE(job[0].out.empty());
    EXPECT_EQ(h.ctx->decodes(), 0);
    // A history that does not reach past the row (the sequence was cut back since) neither.
    Heads                g(GetParam(), {k_prompts[0]});
    const std::vector<llama_token> shorter(g.histories[0].begin(), g.histories[0].end() - 2);
    std::vector<HeadJob> cut{{.head = g.seqs[0].get(), .req = {.history = shorter, .k = 4}}};
    HeadDraft::propose_together(cut);
    EXPECT_TRUE(cut[0].out.empty());
}

TEST_P(HeadDraftTest, CancelledRequestProposesNothing) {
    Heads h(GetParam(), {k_prompts[0]});
    h.cancel = true;
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
    HeadDraft::propose_together(job);
    EXPECT_TRUE(job[0].out.empty());
}

INSTANTIATE_TEST_SUITE_P(HeadDraft, HeadDraftTest, ::testing::Values(k_assistant, k_eagle3, k_mtp, k_dflash),
                         [](const auto & info) {
                             switch (info.param.kind) {
                                 case DraftKind::eagle3: return std::string("Eagle3");
                                 case DraftKind::mtp: return std::string("Mtp");
                                 case DraftKind::dflash: return std::string("DFlash");
                                 default: return std::string("Assistant");
                             }
                         });

namespace {

// A head's own cache (EAGLE3's, an MTP layer's) after a prompt: the pair of every token but
// the last (which waits for the token after it); a draft goes on from the last token's
// position and the next feed takes the drafted positions back.
void expect_cache_holds_the_pairs(const HeadFixture & f) {
    Heads             h(f, {k_prompts[0], k_prompts[2]});
    const std::size_t n0 = h.histories[0].size() - 1, n1 = h.histories[1].size() - 1; // prompt lengths
    EXPECT_EQ(h.head_pos_max(0), llama_pos(n0) - 2);
    EXPECT_EQ(h.head_pos_max(1), llama_pos(n1) - 2);
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 3}}};
    HeadDraft::propose_together(job);
    ASSERT_EQ(job[0].out.tokens.size(), 3u);
    // The bridge (the last prompt token's pair) and the first two drafts' pairs.
    EXPECT_EQ(h.head_pos_max(0), llama_pos(n0) + 1);
    EXPECT_EQ(h.head_pos_max(1), llama_pos(n1) - 2) << "the other sequence is left as it was";
}

} // namespace

TEST(HeadDraftEagle3, ItsCacheHoldsThePairsOfWhatTheTargetDecoded) { expect_cache_holds_the_pairs(k_eagle3); }

TEST(HeadDraftMtp, ItsCacheHoldsThePairsOfWhatTheTargetDecoded) { expect_cache_holds_the_pairs(k_mtp); }

// DFlash's cache after a prompt: the features of every position decoded; a block drafted
// after it leaves nothing behind, and what it drafts first is what the target chooses there
// on most positions (the fixture's dialed agreement).
TEST(HeadDraftDFlash, ItsCacheHoldsEveryDecodedPositionAndNoDraftedBlock) {
    Heads             h(k_dflash, {k_prompts[0], k_prompts[2]});
    const std::size_t n0 = h.histories[0].size() - 1, n1 = h.histories[1].size() - 1; // prompt lengths
    EXPECT_EQ(h.head_pos_max(0), llama_pos(n0) - 1);
    EXPECT_EQ(h.head_pos_max(1), llama_pos(n1) - 1);
    std::vector<HeadJob> jobs{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 5}},
                              {.head = h.seqs[1].get(), .req = {.history = h.histories[1], .k = 5}}};
    HeadDraft::propose_together(jobs);
    EXPECT_EQ(jobs[0].out.tokens.size(), 5u);
    EXPECT_EQ(jobs[1].out.tokens.size(), 5u);
    EXPECT_EQ(h.ctx->decodes(), 1) << "both blocks in one decode";
    EXPECT_EQ(h.head_pos_max(0), llama_pos(n0) - 1) << "the block was taken back";
    EXPECT_EQ(h.head_pos_max(1), llama_pos(n1) - 1);
}

// A cache that was forgotten (after an image, a restored prompt or a shift) drafts on: the
// sequence starts over at the row's position. The fixture's head attends to its own position
// only, so it drafts what it did with its whole cache.
TEST(HeadDraftEagle3, AForgottenCacheStartsOverAtTheRow) {
    Heads h(k_eagle3, {k_prompts[0]});
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 3}}};
    HeadDraft::propose_together(job);
    Heads g(k_eagle3, {k_prompts[0]});
    g.ctx->forget(0);
    EXPECT_EQ(g.head_pos_max(0), -1);
    std::vector<HeadJob> again{{.head = g.seqs[0].get(), .req = {.history = g.histories[0], .k = 3}}};
    HeadDraft::propose_together(again);
    EXPECT_EQ(again[0].out.tokens, job[0].out.tokens);
    EXPECT_EQ(g.head_pos_max(0), llama_pos(g.histories[0].size() - 1) + 1) << "it starts over where the row is";
}

namespace {

// One sequence of a fixture target and its head with a cache of its own, driven as the
// session drives them: a target decode, then the head fed that decode's tokens and given the
// row that chose the next token.
struct OwnCacheRun {
    std::shared_ptr<Model>       target;
    CreatedContext               tctx;
    std::shared_ptr<HeadContext> ctx;
    KvSequence                   kv;
    HeadDraft                    head;
    std::vector<llama_token>     history; // committed tokens, the last not decoded yet
    std::atomic<bool>            cancel{false};

    explicit OwnCacheRun(const HeadFixture & f) :
        target(target_of(f)),
        tctx(create_context(*target, sequences_params(*target, k_ctx, 1, 256), "target")),
        ctx(std::make_shared<HeadContext>(f.kind == DraftKind::mtp ? target : fixtures::shared_model(f.head), f.kind,
                                          *target, tctx.ctx.get(), k_ctx, 1, 256)),
        kv(tctx.ctx.get(), 0), head(ctx, 0) {
        // llama.cpp's default of 4 threads spins at its barriers on a 2-core machine: these
        // contexts decode a token or a few at a time.
        llama_set_n_threads(tctx.ctx.get(), 1, 1);
        SamplingOptions sampling = fixtures::greedy(1).sampling;
        sampling.temperature     = 1.0f; // distributions to compare, not point masses
        head.begin_request(sampling, &cancel);
    }

    // Decodes `tokens` after what the target holds and feeds them to the head. Returns the
    // target's greedy choice after each token.
    std::vector<llama_token> decode(const std::vector<llama_token> & tokens, HeadDraft::Pairs how = HeadDraft::Pairs::now) {
        Batch batch(256, 1);
        for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], kv.next_pos() + llama_pos(i), 0, true);
        if (llama_decode(tctx.ctx.get(), batch.get()) != 0) throw std::runtime_error("target decode failed");
        std::vector<llama_token> choices;
        const int32_t            n_vocab = llama_vocab_n_tokens(target->vocab());
        for (int32_t i = 0; i < batch.size(); ++i) {
            const float * logits = llama_get_logits_ith(tctx.ctx.get(), i);
            choices.push_back(llama_token(std::max_element(logits, logits + n_vocab) - logits));
        }
        ctx->after_target_decode(batch.size());
        ctx->clear();
        if (!head.feed(batch.get(), 0, batch.size(), how)) throw std::runtime_error("head feed failed");
        return choices;
    }

    // After decode(): the target keeps the first `n_keep` tokens decoded; the row of the last
    // of them chose the next token. Then the head's fed pairs are decoded.
    void keep(const std::vector<llama_token> & decoded, size_t n_keep) {
        kv.appended(std::span(decoded).first(n_keep));
        kv.keep(kv.size());
        head.take_row(int32_t(n_keep) - 1, kv);
        if (ctx->size() > 0 && !ctx->decode(/*drafting=*/false)) throw std::runtime_error("head feed failed");
    }

    // A prompt read as the session reads one: decoded and fed as `how` says; the history is the
    // prompt and the target's choice after it.
    void read_prompt(const std::vector<llama_token> & prompt, HeadDraft::Pairs how = HeadDraft::Pairs::now) {
        history            = prompt;
        const auto choices = decode(prompt, how);
        keep(prompt, prompt.size());
        history.push_back(choices.back());
    }

    // `n` rounds that draft nothing (as at depth 0): the last token decoded alone, its pair
    // left waiting as the session leaves a round's.
    void idle_rounds(size_t n) {
        for (size_t round = 0; round < n; ++round) verify_round({});
    }

    spec::Proposal propose(int k) {
        std::vector<HeadJob> job{{.head = &head, .req = {.history = history, .k = k, .seed = 3}}};
        catch_up_ns = HeadDraft::propose_together(job);
        return std::move(job[0].out);
    }
    int64_t catch_up_ns = 0; // what the last propose() spent catching up

    // A round: its last token and drafts (none: a round at depth 0) decoded and verified,
    // their pairs fed as `how` says (by default left for the next draft, as the session leaves
    // them); returns how many drafts the target accepted. The target's cache drops the rejected
    // positions; the head's keeps them until its sequence next writes there.
    size_t verify_round(const spec::Proposal & p, HeadDraft::Pairs how = HeadDraft::Pairs::round) {
        std::vector<llama_token> tokens{history.back()};
        tokens.insert(tokens.end(), p.tokens.begin(), p.tokens.end());
        const auto choices = decode(tokens, how);
        size_t     n_acc   = 0;
        while (n_acc < p.tokens.size() && choices[n_acc] == p.tokens[n_acc]) ++n_acc;
        llama_memory_seq_rm(llama_get_memory(tctx.ctx.get()), 0, kv.next_pos() + llama_pos(1 + n_acc), -1);
        keep(tokens, 1 + n_acc);
        history.insert(history.end(), p.tokens.begin(), p.tokens.begin() + std::ptrdiff_t(n_acc));
        history.push_back(choices[n_acc]);
        return n_acc;
    }
};

// Two one-token proposals drafted from what should be the same cache: the same draft, and its
// distribution's top candidates to within `tolerance` (the batch shapes' rounding).
void expect_same_proposal(const spec::Proposal & a, const spec::Proposal & b, double tolerance) {
    ASSERT_EQ(a.dists.size(), 1u);
    ASSERT_EQ(b.dists.size(), 1u);
    const spec::TokenDist & qa = a.dists[0];
    const spec::TokenDist & qb = b.dists[0];
    ASSERT_FALSE(qa.ids.empty());
    for (size_t i = 0; i < std::min<size_t>(qa.ids.size(), 5); ++i) {
        EXPECT_NEAR(qa.probs[i], qb.prob_of(qa.ids[i]), tolerance) << "candidate " << i;
    }
    EXPECT_EQ(a.tokens, b.tokens);
}

// A head's own cache fed chunk by chunk and round by round (each round's drafts verified, the
// rejected positions taken back, the bridge pair before each part, the pairs of rounds
// without drafts left waiting and decoded before the next draft) holds what one decode of the
// whole history feeds it: the head drafts from either with the same distribution. EAGLE3's
// uniform-attention head weighs every pair alike; the MTP fixture's layer reads its cache
// through an attention of a twentieth of its output's weight.
void expect_fed_round_by_round_as_at_once(const HeadFixture & f, double tolerance) {
    OwnCacheRun inc(f);
    inc.history = inc.target->tokenize("Once upon a time, in a land far away,", true, true);
    {
        // The prompt in two chunks: the second's first token completes the first's last pair.
        const auto                     prompt = inc.history;
        const size_t                   half   = prompt.size() / 2;
        const std::vector<llama_token> a(prompt.begin(), prompt.begin() + std::ptrdiff_t(half));
        const std::vector<llama_token> b(prompt.begin() + std::ptrdiff_t(half), prompt.end());
        inc.decode(a);
        inc.keep(a, a.size());
        const auto choices = inc.decode(b);
        inc.keep(b, b.size());
        inc.history.push_back(choices.back());
    }
    int rejected = 0;
    for (int round = 0; round < 14; ++round) {
        // Two rounds in every four draft nothing (as at depth 0): their pairs wait in the
        // sequence's backlog (the session defers them) until the next draft decodes them; the
        // bridge pair is the feed's then.
        const bool           idle = round % 4 >= 2;
        const spec::Proposal p    = idle ? spec::Proposal{} : inc.propose(3);
        ASSERT_EQ(p.tokens.size(), idle ? 0u : 3u) << "round " << round;
        const size_t n_acc = inc.verify_round(p, idle ? HeadDraft::Pairs::round : HeadDraft::Pairs::now);
        rejected += int(p.tokens.size() - n_acc);
    }
    ASSERT_GT(rejected, 0) << "no round had a rejected draft to take back";

    OwnCacheRun once(f);
    once.history = inc.history;
    const std::vector<llama_token> read(once.history.begin(), once.history.end() - 1);
    once.decode(read);
    once.keep(read, read.size());

    const spec::Proposal a = inc.propose(1);
    const spec::Proposal b = once.propose(1);
    // Every one of the history's tokens weighs 1/n in the draft's input: one pair missing,
    // doubled or shifted moves the distribution far more than the batch shapes' rounding.
    expect_same_proposal(a, b, tolerance);
}

} // namespace

TEST(HeadDraftEagle3, ACacheFedRoundByRoundHoldsWhatOneFeedOfTheHistoryGives) {
    expect_fed_round_by_round_as_at_once({"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3}, 2e-3);
}

TEST(HeadDraftMtp, ACacheFedRoundByRoundHoldsWhatOneFeedOfTheHistoryGives) {
    expect_fed_round_by_round_as_at_once(k_mtp, 2e-5);
}

// A sequence parked at depth 0 for longer than the backlog holds: only the most recent
// HeadDraft::k_backlog_max pairs wait, and its cache starts over with them (the round that
// drafts again decodes those, not every pair since the last draft). The uniform-attention head
// weighs every pair in its cache alike: a pair more or less, or the prompt's pairs kept, moves
// its distribution far beyond the tolerance.
TEST(HeadDraftEagle3, AParkedSequenceKeepsItsMostRecentPairsOnly) {
    const HeadFixture f{"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3};
    const size_t      window = HeadDraft::k_backlog_max;
    OwnCacheRun       inc(f);
    inc.read_prompt(inc.target->tokenize("Once upon a time, in a land far away,", true, true));
    inc.idle_rounds(window + 8);

    // The reference: the target reads the same history; the head is fed only its last
    // `window` pairs (its cache forgotten before them).
    OwnCacheRun once(f);
    once.history = inc.history;
    const std::vector<llama_token> read(once.history.begin(), once.history.end() - 1);
    const size_t                   split = read.size() - window - 1;
    const std::vector<llama_token> before(read.begin(), read.begin() + std::ptrdiff_t(split));
    const std::vector<llama_token> after(read.begin() + std::ptrdiff_t(split), read.end());
    once.decode(before);
    once.keep(before, before.size());
    once.head.forget();
    once.decode(after);
    once.keep(after, after.size());

    const spec::Proposal a = inc.propose(1);
    const spec::Proposal b = once.propose(1);
    expect_same_proposal(a, b, 2e-3);
}

// EAGLE3's encoder runs in the decode that reads the target's rows, not after every target
// decode: steps whose pairs wait (a sequence parked at depth 0) cost no encoder pass, and the
// draft that follows encodes its waiting pairs and its first row in one.
TEST(HeadDraftEagle3, RowsWaitingForTheHeadCostNoEncoderPass) {
    const HeadFixture f{"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3};
    OwnCacheRun       run(f);
    run.read_prompt(run.target->tokenize("Once upon a time, in a land far away,", true, true));
    const int64_t after_prompt = run.ctx->encodes();
    EXPECT_EQ(after_prompt, 1) << "the prompt's pairs, fed now, in one pass";
    run.idle_rounds(6);
    EXPECT_EQ(run.ctx->encodes(), after_prompt) << "parked rounds encode nothing";
    const spec::Proposal p = run.propose(3);
    EXPECT_FALSE(p.tokens.empty());
    EXPECT_EQ(run.ctx->encodes(), after_prompt + 1) << "fewer than k_catch_up_apart pairs waited: with the row in one pass";
}

// A prompt's pairs wait for the sequence's first round (HeadDraft::Pairs::prompt): a request
// whose rounds draft nothing (the drafting gate said no, it started parked) costs no encoder
// pass for its prompt, and the draft that follows encodes what waits in one.
TEST(HeadDraftEagle3, APromptsPairsCostNoEncoderPassUntilItDrafts) {
    const HeadFixture f{"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3};
    OwnCacheRun       run(f);
    run.read_prompt(run.target->tokenize("Once upon a time, in a land far away,", true, true), HeadDraft::Pairs::prompt);
    EXPECT_EQ(run.ctx->encodes(), 0) << "the prompt's pairs wait";
    run.idle_rounds(4);
    EXPECT_EQ(run.ctx->encodes(), 0) << "rounds without drafts encode nothing either";
    EXPECT_FALSE(run.propose(3).tokens.empty());
    EXPECT_EQ(run.ctx->encodes(), 2) << "the prompt's and the rounds' pairs in one pass, the row in the draft's";
}

// Pairs that waited for more than a round (a prompt's, a parked sequence's), at least
// k_catch_up_apart of them, are decoded apart from the draft and their time is returned as
// catching up, which the session keeps out of what the drafts cost; a round's pairs after a
// round that drafted go with the next draft's first token (no decode of their own, nothing to
// catch up).
TEST(HeadDraftEagle3, CatchingUpIsTimedApartFromTheDraft) {
    const HeadFixture f{"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3};
    OwnCacheRun       run(f);
    run.read_prompt(run.target->tokenize("Once upon a time, in a land far away,", true, true), HeadDraft::Pairs::prompt);
    spec::Proposal p = run.propose(2);
    ASSERT_FALSE(p.tokens.empty());
    EXPECT_GT(run.catch_up_ns, 0) << "the prompt's pairs waited for this draft";
    for (int round = 0; round < 3; ++round) {
        run.verify_round(p);
        const int64_t decodes = run.ctx->decodes();
        p                     = run.propose(2);
        ASSERT_EQ(p.tokens.size(), 2u) << "round " << round;
        EXPECT_EQ(run.catch_up_ns, 0) << "round " << round << ": one round's pairs, read with the draft";
        EXPECT_EQ(run.ctx->decodes() - decodes, 2) << "round " << round << ": a decode per draft position, none more";
    }
    // A few rounds without drafts: their pairs go with the draft (a decode of their own would
    // cost more than they distort); more: apart.
    run.verify_round(p);
    run.idle_rounds(HeadDraft::k_catch_up_apart - 5);
    int64_t encodes = run.ctx->encodes();
    p               = run.propose(2);
    ASSERT_FALSE(p.tokens.empty());
    EXPECT_EQ(run.catch_up_ns, 0) << "fewer than k_catch_up_apart pairs waited";
    EXPECT_EQ(run.ctx->encodes() - encodes, 1) << "the waiting pairs and the row in one pass";
    run.verify_round(p);
    run.idle_rounds(HeadDraft::k_catch_up_apart + 2);
    encodes = run.ctx->encodes();
    ASSERT_FALSE(run.propose(2).tokens.empty());
    EXPECT_GT(run.catch_up_ns, 0) << "k_catch_up_apart + 2 rounds' pairs waited";
    EXPECT_EQ(run.ctx->encodes() - encodes, 2) << "the waiting pairs apart, the row with the draft";
}

// A prompt's waiting pairs are kept whole, also beyond the window a parked sequence keeps
// (HeadDraft::k_backlog_max), and one longer than HeadDraft::k_prompt_wait is decoded as it
// comes: the first draft drafts from every pair of the prompt, as after a prompt fed at once.
// The uniform-attention head weighs every pair alike: one pair dropped moves its
// distribution far beyond the tolerance.
TEST(HeadDraftEagle3, AWaitingPromptIsDraftedFromWhole) {
    const HeadFixture f{"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3};
    for (const size_t at_least : {HeadDraft::k_backlog_max + 8, HeadDraft::k_prompt_wait + 20}) {
        OwnCacheRun waited(f), fed(f);
        std::string text = "Once upon a time,";
        while (waited.target->tokenize(text, true, true).size() < at_least) text += " in a land far away, a king";
        const auto prompt = waited.target->tokenize(text, true, true);
        ASSERT_LT(prompt.size(), size_t(200)) << "the runs' batches hold 256 tokens";
        waited.read_prompt(prompt, HeadDraft::Pairs::prompt);
        fed.read_prompt(prompt);
        EXPECT_EQ(waited.ctx->encodes() > 0, prompt.size() > HeadDraft::k_prompt_wait)
            << prompt.size() << " tokens: only a prompt longer than the wait is encoded before the draft";
        expect_same_proposal(waited.propose(1), fed.propose(1), 2e-3);
    }
}

namespace {

// The prompt cache's copy of a head's own cache, saved beside the target's state (the pairs
// still waiting decoded first) and restored with it into a sequence of another context: the
// head drafts from the restored prefix as the one that read it did, to within the batch
// shapes' rounding. A head that started over after the restore would hold one pair of the
// history instead of all of them.
void expect_restored_with_the_target(const HeadFixture & f, double tolerance) {
    OwnCacheRun a(f);
    a.read_prompt(a.target->tokenize("Once upon a time, in a land far away,", true, true));
    a.idle_rounds(4); // rounds without drafts: their pairs wait
    const auto target_state = a.kv.save(size_t(1) << 30);
    const auto head_state   = a.head.save_state(a.kv, size_t(1) << 30);
    ASSERT_TRUE(target_state.has_value());
    ASSERT_TRUE(head_state.has_value());
    const spec::Proposal want = a.propose(1);

    OwnCacheRun b(f);
    b.history = a.history;
    ASSERT_TRUE(b.kv.restore(*target_state, target_state->tokens.size()));
    b.head.restore_state(*head_state);
    const size_t kept = b.head.begin_prompt(b.kv, target_state->tokens.size(), /*in_place=*/false, /*feeds=*/true,
                                            b.history);
    ASSERT_EQ(kept + 1, target_state->tokens.size()) << "the last kept token is decoded again for its row";
    const std::vector<llama_token> rest(b.history.begin() + std::ptrdiff_t(kept), b.history.end() - 1);
    b.decode(rest);
    b.keep(rest, rest.size());
    const spec::Proposal got = b.propose(1);

    expect_same_proposal(want, got, tolerance);
}

} // namespace

TEST(HeadDraftEagle3, ItsCacheComesBackFromThePromptCacheWithTheTargets) {
    expect_restored_with_the_target({"eagle3-target.gguf", "eagle3-uniform-head.gguf", DraftKind::eagle3}, 2e-3);
}

TEST(HeadDraftMtp, ItsCacheComesBackFromThePromptCacheWithTheTargets) {
    expect_restored_with_the_target(k_mtp, 2e-5);
}
