// The draft model drafting for several sequences together: each sequence's proposal is what
// it proposes alone (catch-up, depth, grammar, end of a long history read in chunks), and
// drafting together costs one decode per draft position for all of them, not one per
// sequence and position.
#include "engine/draft_model.h"
#include "engine/grammar_constraint.h"
#include "fixtures.h"
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <atomic>

using namespace specd;
using namespace specd::engine;

namespace {

constexpr uint32_t k_ctx   = 1024;
constexpr int32_t  k_batch = 64; // smaller than the long history below: it is read in chunks

struct Drafts {
    std::shared_ptr<DraftContext>            ctx;
    std::vector<std::unique_ptr<DraftModel>> seqs;
    std::atomic<bool>                        cancel{false};

    explicit Drafts(int n_seq) {
        auto target = fixtures::shared_model("pair-target.gguf");
        ctx         = std::make_shared<DraftContext>(fixtures::shared_model("pair-draft.gguf"), *target, k_ctx, n_seq, k_batch);
        for (int i = 0; i < n_seq; ++i) {
            seqs.push_back(std::make_unique<DraftModel>(ctx, i));
            seqs.back()->begin_request(fixtures::greedy(1).sampling, &cancel);
        }
    }
};

std::vector<llama_token> tokens(const std::string & text) {
    return fixtures::shared_model("pair-target.gguf")->tokenize(text, true, true);
}

} // namespace

TEST(DraftModel, ProposalsTogetherAreTheProposalsAlone) {
    const std::vector<std::vector<llama_token>> histories = {
        tokens("Once upon a time"),
        tokens(std::string(300, 'a') + " and then"), // over the batch: several chunks
        tokens("one two three four"),
        tokens("the cat sat on the mat."),
    };
    const int ks[] = {4, 6, 0, 8}; // a sequence asked for nothing proposes nothing

    // Alone: each on a context of its own.
    std::vector<spec::Proposal> alone;
    for (size_t i = 0; i < histories.size(); ++i) {
        Drafts                d(1);
        std::vector<DraftJob> job{{.draft = d.seqs[0].get(), .req = {.history = histories[i], .k = ks[i]}}};
        DraftModel::propose_together(job);
        alone.push_back(std::move(job[0].out));
    }

    // Together, twice: the second round continues each history by its first draft token (or
    // by another token), so the sequences keep what still matches and drop the rest.
    Drafts                d(4);
    std::vector<DraftJob> jobs;
    for (size_t i = 0; i < histories.size(); ++i) {
        jobs.push_back({.draft = d.seqs[i].get(), .req = {.history = histories[i], .k = ks[i]}});
    }
    DraftModel::propose_together(jobs);
    for (size_t i = 0; i < histories.size(); ++i) {
        EXPECT_EQ(jobs[i].out.tokens, alone[i].tokens) << "sequence " << i;
        EXPECT_EQ(jobs[i].out.tokens.size(), size_t(ks[i])) << "random weights never end a draft early";
        ASSERT_EQ(jobs[i].out.dists.size(), jobs[i].out.tokens.size());
    }
    for (int round = 0; round < 2; ++round) {
        std::vector<std::vector<llama_token>> longer = histories;
        longer[0].push_back(alone[0].tokens[0]);   // the first draft accepted
        longer[1].push_back(alone[1].tokens[0] + 1); // a rejection
        longer[3].push_back(alone[3].tokens[0]);
        std::vector<DraftJob> again;
        std::vector<spec::Proposal> ref;
        for (size_t i = 0; i < longer.size(); ++i) {
            again.push_back({.draft = d.seqs[i].get(), .req = {.history = longer[i], .k = 3}});
            Drafts                solo(1);
            std::vector<DraftJob> job{{.draft = solo.seqs[0].get(), .req = {.history = longer[i], .k = 3}}};
            DraftModel::propose_together(job);
            ref.push_back(std::move(job[0].out));
        }
        DraftModel::propose_together(again);
        for (size_t i = 0; i < longer.size(); ++i) {
            EXPECT_EQ(again[i].out.tokens, ref[i].tokens) << "round " << round << ", sequence " << i;
        }
    }
}

TEST(DraftModel, DraftingTogetherTakesOneDecodePerPosition) {
    Drafts                                  d(4);
    const std::vector<std::vector<llama_token>> histories = {tokens("a b c"), tokens("d e f"), tokens("g h i"),
                                                             tokens("j k l")};
    std::vector<DraftJob>                   jobs;
    for (size_t i = 0; i < histories.size(); ++i) {
        jobs.push_back({.draft = d.seqs[i].get(), .req = {.history = histories[i], .k = 5}});
    }
    const int64_t before = d.ctx->decodes();
    DraftModel::propose_together(jobs);
    // One decode reads the four short prompts and gives the first drafts; four more give the
    // other four positions. One at a time this would be 4 x 5.
    EXPECT_EQ(d.ctx->decodes() - before, 5);
    for (const DraftJob & j : jobs) EXPECT_EQ(j.out.tokens.size(), 5u);
}

TEST(DraftModel, EachSequenceDraftsUnderItsOwnGrammar) {
    auto                            target = fixtures::shared_model("pair-target.gguf");
    const GrammarConstraint      json(target->vocab_index(), grammar::json_object_grammar());
    Drafts                          d(2);
    const std::vector<llama_token>  h0 = tokens("Give me JSON"), h1 = tokens("Give me text");
    std::vector<DraftJob>           jobs{{.draft = d.seqs[0].get(), .req = {.history = h0, .k = 6, .constraint = &json}},
                                         {.draft = d.seqs[1].get(), .req = {.history = h1, .k = 6}}};
    DraftModel::propose_together(jobs);
    ASSERT_FALSE(jobs[0].out.tokens.empty());
    EXPECT_EQ(json.legal_prefix(jobs[0].out.tokens), jobs[0].out.tokens.size()) << "the draft kept to the grammar";
    EXPECT_EQ(jobs[1].out.tokens.size(), 6u);
}

TEST(DraftModel, ACancelledSequenceProposesNothingAndTheOthersGoOn) {
    Drafts                         d(2);
    const std::vector<llama_token> h = tokens("Once upon a time");
    std::atomic<bool>              stop{true};
    d.seqs[1]->begin_request(fixtures::greedy(1).sampling, &stop);
    std::vector<DraftJob> jobs{{.draft = d.seqs[0].get(), .req = {.history = h, .k = 4}},
                               {.draft = d.seqs[1].get(), .req = {.history = h, .k = 4}}};
    DraftModel::propose_together(jobs);
    EXPECT_EQ(jobs[0].out.tokens.size(), 4u);
    EXPECT_TRUE(jobs[1].out.tokens.empty());
}

// Image positions are fillers to the draft: it reads only what follows the last image, so a
// prompt with a 300-position image costs the draft what its text alone costs, and proposes
// what that text alone proposes.
TEST(DraftModel, TheDraftReadsOnlyWhatFollowsTheLastImage) {
    const std::vector<llama_token> text = tokens("Describe the picture in one line");
    std::vector<llama_token>       history(5, 1);            // the template's tokens before the image
    history.insert(history.end(), 300, llama_token(-1));     // the image's positions
    const std::vector<llama_token> after(text.begin() + 1, text.end()); // no BOS after the image
    history.insert(history.end(), after.begin(), after.end());

    Drafts                d(1);
    const int64_t         before = d.ctx->decodes();
    std::vector<DraftJob> jobs{{.draft = d.seqs[0].get(), .req = {.history = history, .k = 3}}};
    DraftModel::propose_together(jobs);
    // One decode reads the text and gives the first draft, two more the others; reading the
    // image's 300 positions too would take 5 more chunks of 64.
    EXPECT_EQ(d.ctx->decodes() - before, 3);
    ASSERT_EQ(jobs[0].out.tokens.size(), 3u);

    Drafts                alone(1);
    std::vector<DraftJob> solo{{.draft = alone.seqs[0].get(), .req = {.history = after, .k = 3}}};
    DraftModel::propose_together(solo);
    EXPECT_EQ(jobs[0].out.tokens, solo[0].out.tokens);

    // The next round goes on from there (the image is not read then either).
    std::vector<llama_token> longer = history;
    longer.push_back(jobs[0].out.tokens[0]);
    const int64_t         mid = d.ctx->decodes();
    std::vector<DraftJob> next{{.draft = d.seqs[0].get(), .req = {.history = longer, .k = 2}}};
    DraftModel::propose_together(next);
    EXPECT_EQ(d.ctx->decodes() - mid, 2);
}
