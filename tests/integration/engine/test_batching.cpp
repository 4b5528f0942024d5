// Continuous batching in the session: requests on several sequences of one context, decoded
// together step by step, answer exactly as they do alone (temperature 0, speculation and
// grammar on), join and leave mid-way, and a cancelled one leaves without disturbing others.
#include "core/error.h"
#include "fixtures.h"
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <map>

using namespace specd;
using namespace specd::engine;

namespace {

using fixtures::greedy;

ContextOptions ctx(int n_ctx) {
    ContextOptions c;
    c.num_ctx   = n_ctx;
    c.num_batch = 256;
    return c;
}

struct Job {
    std::string     prompt;
    GenerateOptions opts;
};

std::vector<Job> jobs() {
    GenerateOptions json = greedy(40);
    json.grammar         = grammar::json_object_grammar();
    json.end_on_complete_json = true;
    GenerateOptions off  = greedy(48);
    off.draft_num_predict = 0;
    return {{"Once upon a time", greedy(48)},
            {std::string(600, 'a') + " and then", greedy(32)}, // a prompt read over several steps
            {"Give me JSON", json},
            {"one two three four", off}};
}

struct Running {
    std::string       text;
    std::atomic<bool> cancel{false};
    GenerateResult    result;
    bool              done = false;
    std::exception_ptr error;
};

// Starts every job (the first `stagger` at once, one more after each step) and steps until
// all have ended.
void run_batched(Session & s, const std::vector<Job> & js, std::vector<std::unique_ptr<Running>> & out,
                 size_t stagger, size_t cancel_index = SIZE_MAX, int cancel_after_steps = 0) {
    std::map<uint64_t, Running *> by_id;
    size_t                        started = 0;
    const auto start_next = [&] {
        auto r   = std::make_unique<Running>();
        Running * p = r.get();
        const Job & j = js[started++];
        by_id[s.start(MultimodalPrompt{s.model().tokenize(j.prompt, true, true), {}, nullptr}, j.opts,
                      [p](std::string_view t) { p->text += t; }, {}, p->cancel)] = p;
        out.push_back(std::move(r));
    };
    while (started < std::min(stagger, js.size())) start_next();
    int steps = 0;
    while (!by_id.empty() || started < js.size()) {
        if (started < js.size() && s.can_start()) start_next();
        if (cancel_index < out.size() && ++steps == cancel_after_steps) out[cancel_index]->cancel = true;
        for (SeqFinished & f : s.step()) {
            Running * r = by_id.at(f.id);
            r->done     = true;
            r->error    = f.error;
            r->result   = std::move(f.result);
            by_id.erase(f.id);
        }
    }
}

// Every job alone, then four sequences at once (and staggered): the same texts. Drafting
// together costs one draft decode per draft position for all the sequences drafting in a
// step (engine/draft_context.h), so with four started at once the decodes are fewer than the
// tokens drafted.
// `fixed_k`: the depth of every job that drafts (none: the adaptive controller's).
// `drafter` null: the target drafts with its own MTP layer.
void expect_batched_as_alone(const char * target, const char * drafter, std::optional<int> fixed_k) {
    auto model = drafter ? fixtures::shared_model(target) : fixtures::shared_mtp_model(target);
    auto draft = drafter ? fixtures::shared_model(drafter) : nullptr;
    std::vector<Job> js = jobs();
    for (Job & j : js) {
        if (fixed_k && j.opts.draft_num_predict != 0) j.opts.draft_fixed_k = fixed_k;
    }

    std::vector<fixtures::Output> solo;
    {
        Session one(model, ctx(2048), draft);
        for (const Job & j : js) solo.push_back(fixtures::generate(one, one.model().tokenize(j.prompt, true, true), j.opts));
    }
    for (size_t stagger : {js.size(), size_t(1)}) {
        Session four(model, ctx(2048), draft, {}, 4);
        ASSERT_EQ(four.n_seq(), 4);
        std::vector<std::unique_ptr<Running>> got;
        run_batched(four, js, got, stagger);
        ASSERT_EQ(got.size(), js.size());
        for (size_t i = 0; i < js.size(); ++i) {
            ASSERT_TRUE(got[i]->done);
            ASSERT_FALSE(got[i]->error) << "job " << i;
            EXPECT_EQ(got[i]->text, solo[i].text) << "job " << i << ", stagger " << stagger;
            EXPECT_EQ(got[i]->result.stats.eval_count, solo[i].result.stats.eval_count) << "job " << i;
            EXPECT_EQ(got[i]->result.context, solo[i].result.context) << "job " << i;
        }
        EXPECT_EQ(got[2]->text.substr(0, 1), "{") << "the grammar held in the batch: " << got[2]->text;
        EXPECT_GT(got[0]->result.speculation.drafted, 0) << "the draft model ran inside the batch";
        if (stagger == js.size()) {
            EXPECT_LT(four.live().draft_decodes, four.live().drafted) << "the sequences drafted one by one";
        }
    }
}

} // namespace

// With a draft model (its depth chosen as the server chooses it) and with gemma4's assistant
// (a head over the target's hidden state) at a fixed depth: the fixture head's step costs
// more than its tiny target's (a 262k vocabulary), so the controller would not draft with it.
TEST(Batching, FourSequencesAnswerAsOneAtATime) {
    expect_batched_as_alone("pair-target.gguf", "pair-draft.gguf", std::nullopt);
}

TEST(Batching, FourSequencesDraftingWithAHeadAnswerAsOneAtATime) {
    expect_batched_as_alone("gemma4-head-target.gguf", "gemma4-assistant.gguf", 3);
}

// EAGLE3: its own cache fed for all sequences in one decode per step, drafting together.
TEST(Batching, FourSequencesDraftingWithAnEagle3HeadAnswerAsOneAtATime) {
    expect_batched_as_alone("eagle3-target.gguf", "eagle3-head.gguf", 3);
}

// A model's own MTP layer: a cache of its own like EAGLE3's, in a context of the same model.
TEST(Batching, FourSequencesDraftingWithAnMtpLayerAnswerAsOneAtATime) {
    expect_batched_as_alone("mtp.gguf", nullptr, 3);
}

// DFlash: its cache fed for all sequences in one decode per step, every block in one decode.
TEST(Batching, FourSequencesDraftingWithADFlashHeadAnswerAsOneAtATime) {
    expect_batched_as_alone("dflash-target.gguf", "dflash-head.gguf", 3);
}

TEST(Batching, MoreRequestsThanSequencesReuseFreedOnes) {
    auto       model = fixtures::shared_model("tiny.gguf");
    auto       js    = jobs();
    const auto more  = js; // eight requests on two sequences
    js.insert(js.end(), more.begin(), more.end());
    Session two(model, ctx(2048), nullptr, {}, 2);
    std::vector<std::unique_ptr<Running>> got;
    run_batched(two, js, got, 2);
    ASSERT_EQ(got.size(), js.size());
    for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_FALSE(got[i]->error);
        EXPECT_EQ(got[i]->text, got[i % 4]->text) << "request " << i << " and its twin";
    }
    EXPECT_THROW(
        {
            std::atomic<bool> c{false};
            two.start(MultimodalPrompt{two.model().tokenize("x", true, true), {}, nullptr}, greedy(400), {}, {}, c);
            two.start(MultimodalPrompt{two.model().tokenize("y", true, true), {}, nullptr}, greedy(400), {}, {}, c);
            two.start(MultimodalPrompt{two.model().tokenize("z", true, true), {}, nullptr}, greedy(400), {}, {}, c);
        },
        Error);
}

TEST(Batching, ACancelledRequestLeavesWithoutDisturbingTheOthers) {
    auto model = fixtures::shared_model("pair-target.gguf");
    auto draft = fixtures::shared_model("pair-draft.gguf");
    auto js    = jobs();
    js[1].opts.num_predict = 400; // still running when it is cancelled
    std::vector<fixtures::Output> solo;
    {
        Session one(model, ctx(2048), draft);
        for (const Job & j : js) solo.push_back(fixtures::generate(one, one.model().tokenize(j.prompt, true, true), j.opts));
    }
    Session four(model, ctx(2048), draft, {}, 4);
    std::vector<std::unique_ptr<Running>> got;
    run_batched(four, js, got, js.size(), /*cancel_index=*/1, /*cancel_after_steps=*/8);
    ASSERT_TRUE(got[1]->error);
    try {
        std::rethrow_exception(got[1]->error);
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    }
    for (size_t i : {0, 2, 3}) {
        ASSERT_FALSE(got[i]->error) << "job " << i;
        EXPECT_EQ(got[i]->text, solo[i].text) << "job " << i;
    }
    EXPECT_LT(got[1]->text.size(), solo[1].text.size());
    EXPECT_EQ(four.running(), 0u);
}
