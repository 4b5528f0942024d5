// A draft head (gemma4's assistant) drafting for several sequences together: a sequence
// drafts only from a row of the target's hidden state it took after a target decode, each
// sequence's proposal together is what it proposes alone, and drafting together costs one head
// decode per position for all of them (the tokens after the row, forced ones included, are
// read one per decode too).
#include "engine/context_factory.h"
#include "engine/head_draft.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <atomic>

using namespace specd;
using namespace specd::engine;

namespace {

constexpr uint32_t k_ctx = 512;

// The gemma4 fixture target with `n_seq` sequences, its head, and a prompt decoded on each.
struct Heads {
    std::shared_ptr<Model>                  target = fixtures::shared_model("gemma4-head-target.gguf");
    CreatedContext                          tctx;
    std::shared_ptr<HeadContext>            ctx;
    std::vector<KvSequence>                 kv;
    std::vector<std::unique_ptr<HeadDraft>> seqs;
    std::vector<std::vector<llama_token>>   histories; // each prompt and the target's greedy token after it
    std::atomic<bool>                       cancel{false};

    Heads(const std::vector<std::string> & prompts, bool take_rows = true) {
        const int n_seq = static_cast<int>(prompts.size());
        tctx = create_context(*target, sequences_params(*target, k_ctx, n_seq, 256), "target");
        ctx  = std::make_shared<HeadContext>(fixtures::shared_model("gemma4-assistant.gguf"), DraftKind::gemma4_assistant,
                                            *target, tctx.ctx.get(), k_ctx, n_seq);
        Batch batch(256, 1);
        std::vector<int32_t> last_idx;
        for (int s = 0; s < n_seq; ++s) {
            kv.emplace_back(tctx.ctx.get(), s);
            histories.push_back(target->tokenize(prompts[size_t(s)], true, true));
            const auto & h = histories.back();
            for (size_t i = 0; i < h.size(); ++i) {
                const int32_t idx = batch.add(h[i], llama_pos(i), s, i + 1 == h.size());
                if (i + 1 == h.size()) last_idx.push_back(idx);
            }
        }
        if (llama_decode(tctx.ctx.get(), batch.get()) != 0) throw std::runtime_error("target decode failed");
        for (int s = 0; s < n_seq; ++s) {
            kv[size_t(s)].appended(histories[size_t(s)]);
            const float * logits = llama_get_logits_ith(tctx.ctx.get(), last_idx[size_t(s)]);
            const int32_t n_vocab = llama_vocab_n_tokens(target->vocab());
            histories[size_t(s)].push_back(llama_token(std::max_element(logits, logits + n_vocab) - logits));
            seqs.push_back(std::make_unique<HeadDraft>(ctx, s));
            seqs.back()->begin_request(fixtures::greedy(1).sampling, &cancel);
            if (take_rows) seqs.back()->take_row(tctx.ctx.get(), last_idx[size_t(s)], kv[size_t(s)]);
        }
    }
};

const std::vector<std::string> k_prompts = {"Once upon a time", "one two three four", "the cat sat on the mat."};

} // namespace

TEST(HeadDraft, ProposalsTogetherAreTheProposalsAloneAtOneDecodePerPosition) {
    std::vector<spec::Proposal> alone;
    for (const std::string & p : k_prompts) {
        Heads                h({p});
        std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
        HeadDraft::propose_together(job);
        EXPECT_EQ(h.ctx->decodes(), 4) << p;
        alone.push_back(std::move(job[0].out));
    }
    Heads                h(k_prompts);
    std::vector<HeadJob> jobs;
    for (size_t s = 0; s < k_prompts.size(); ++s) jobs.push_back({.head = h.seqs[s].get(), .req = {.history = h.histories[s], .k = 4}});
    HeadDraft::propose_together(jobs);
    EXPECT_EQ(h.ctx->decodes(), 4) << "one decode per position for all three sequences";
    for (size_t s = 0; s < k_prompts.size(); ++s) {
        EXPECT_EQ(jobs[s].out.tokens.size(), 4u) << k_prompts[s];
        EXPECT_EQ(jobs[s].out.tokens, alone[s].tokens) << k_prompts[s];
        EXPECT_EQ(jobs[s].out.dists.size(), jobs[s].out.tokens.size());
    }
}

TEST(HeadDraft, TokensAfterTheRowAreReadBeforeDrafting) {
    Heads h({k_prompts[0], k_prompts[1]});
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
    EXPECT_EQ(h.ctx->decodes(), 5) << "2 reads + 3 drafts, the other sequence's drafts in the same decodes";
}

TEST(HeadDraft, NoRowNoProposal) {
    Heads                h({k_prompts[0]}, /*take_rows=*/false);
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
    HeadDraft::propose_together(job);
    EXPECT_TRUE(job[0].out.empty());
    EXPECT_EQ(h.ctx->decodes(), 0);
    // A history that does not reach past the row (the sequence was cut back since) neither.
    Heads                g({k_prompts[0]});
    const std::vector<llama_token> shorter(g.histories[0].begin(), g.histories[0].end() - 2);
    std::vector<HeadJob> cut{{.head = g.seqs[0].get(), .req = {.history = shorter, .k = 4}}};
    HeadDraft::propose_together(cut);
    EXPECT_TRUE(cut[0].out.empty());
}

TEST(HeadDraft, CancelledRequestProposesNothing) {
    Heads h({k_prompts[0]});
    h.cancel = true;
    std::vector<HeadJob> job{{.head = h.seqs[0].get(), .req = {.history = h.histories[0], .k = 4}}};
    HeadDraft::propose_together(job);
    EXPECT_TRUE(job[0].out.empty());
}
