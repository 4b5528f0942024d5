// The generation loop on a real (tiny, random-weight) model: determinism, the prefix reuse of
// the KV cache, stop strings, truncation, context shift, seeds, UTF-8, grammar, cancellation.
#include "core/error.h"
#include "core/utf8.h"
#include "engine/chat_template.h"
#include "engine/prompt_builder.h"
#include "engine/session.h"
#include "engine/thread_tuning.h"
#include "fixtures.h"
#include "grammar/json_schema.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <thread>

using namespace specd;
using namespace specd::engine;

namespace {

using fixtures::Output;

Output run(Session & s, const std::string & prompt, GenerateOptions opts) {
    return fixtures::generate(s, s.model().tokenize(prompt, true, true), opts);
}

using fixtures::greedy;

ContextOptions ctx(int n_ctx) {
    ContextOptions c;
    c.num_ctx   = n_ctx;
    c.num_batch = std::min(512, n_ctx);
    return c;
}

} // namespace

TEST(Session, GreedyIsDeterministicAndPrefixReuseChangesNothing) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session a(model, ctx(512));
    auto first  = run(a, "The quick brown fox", greedy(24));
    auto second = run(a, "The quick brown fox", greedy(24)); // KV prefix reused
    Session b(model, ctx(512));
    auto fresh = run(b, "The quick brown fox", greedy(24));
    EXPECT_EQ(first.result.reason, DoneReason::length);
    EXPECT_EQ(first.result.stats.eval_count, 24);
    EXPECT_EQ(first.text, second.text);
    EXPECT_EQ(first.text, fresh.text);
    EXPECT_LT(second.result.stats.prompt_eval_count, first.result.stats.prompt_eval_count);
}

TEST(Session, StopStringEndsTheAnswerBeforeIt) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session s(model, ctx(512));
    auto    full = run(s, "Once upon a time", greedy(40));
    ASSERT_GT(full.text.size(), 20u);
    // A stop string from the middle of the answer, likely spanning a token boundary.
    const std::string stop   = full.text.substr(full.text.size() / 2, 5);
    const size_t      cut    = full.text.find(stop);
    auto              opts   = greedy(40);
    opts.stop                = {stop};
    auto              halted = run(s, "Once upon a time", opts);
    EXPECT_EQ(halted.result.reason, DoneReason::stop);
    EXPECT_EQ(halted.text, full.text.substr(0, cut));
    EXPECT_EQ(halted.text.find(stop), std::string::npos);
}

TEST(Session, LongPromptIsTruncatedOrRefused) {
    auto        model = fixtures::shared_model("tiny.gguf");
    Session     s(model, ctx(64));
    std::string prompt;
    for (int i = 0; i < 60; ++i) prompt += "word" + std::to_string(i) + " ";
    ASSERT_GT(model->tokenize(prompt, true, true).size(), 64u);

    auto ok = run(s, prompt, greedy(4));
    EXPECT_EQ(ok.result.stats.eval_count, 4);
    EXPECT_LE(ok.result.context.size() - ok.result.stats.eval_count, 63u); // the prompt part fits
    // The first num_keep tokens survive truncation.
    const auto tokens = model->tokenize(prompt, true, true);
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.begin() + 4, ok.result.context.begin()));

    auto opts     = greedy(4);
    opts.truncate = false;
    try {
        run(s, prompt, opts);
        FAIL() << "expected a bad_request";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        EXPECT_NE(std::string(e.what()).find("context"), std::string::npos);
    }
}

// A context smaller than the 8-token batch that thread calibration times: llama.cpp caps a
// context's batch at its n_ctx and aborts the process on a larger one.
TEST(Session, ContextsSmallerThanAVerifyBatchAreCalibratedAndAnswer) {
    for (int n_ctx : {1, 2, 7}) {
        // A model of its own: a model's thread counts are measured by its first session only.
        auto model = Model::load(fixtures::fixture("tiny.gguf"), {});
        ASSERT_GE(model->size_bytes(), k_unmeasured_model_bytes);
        Session s(model, ctx(n_ctx));
        EXPECT_FALSE(s.threads().decode.empty()) << "num_ctx " << n_ctx << ": one-token steps are timed";
        EXPECT_TRUE(s.threads().batch.empty()) << "num_ctx " << n_ctx << ": no batch of 8 fits";
        auto out = run(s, "hi", greedy(2));
        EXPECT_GE(out.result.stats.eval_count, 1) << "num_ctx " << n_ctx;
    }
}

// Now and then a one-token step runs on the thread trial's other count (ThreadTrial): on 2
// cores, 1 thread, about twice the step. Timed as the model's step, those made a parked
// request's one-token step look a quarter dearer than it is, and drafting at an acceptance
// where it loses look like a gain (the EAGLE3 pair at 0.6 drafted whole answers after images
// at 0.88-0.98x of spec-off). Those rounds are not timed for the depth controller.
TEST(Session, TheThreadTrialsStepsAreNotTimedForTheDepthController) {
    auto model = Model::load(fixtures::fixture("tiny.gguf"), {});
    Session s(model, ctx(256));
    if (runner_up(s.threads().decode, s.threads().n_threads) == 0) {
        GTEST_SKIP() << "one thread count only: no trial";
    }
    const auto out = run(s, "hi", greedy(64));
    const spec::DepthStats & d = out.result.speculation;
    ASSERT_GE(d.rounds, 32);
    // The trial's interval starts at every 4th one-token step and doubles while its choice
    // holds.
    EXPECT_GE(d.untimed_rounds, 2);
    EXPECT_LE(d.untimed_rounds, d.rounds / 3);
}

TEST(Session, ContextShiftsUnlessShiftIsOff) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session s(model, ctx(64));
    auto    shifted = run(s, "Hello", greedy(100));
    EXPECT_EQ(shifted.result.stats.eval_count, 100);
    EXPECT_EQ(shifted.result.reason, DoneReason::length);

    auto opts  = greedy(100);
    opts.shift = false;
    auto ended = run(s, "Hello", opts);
    EXPECT_EQ(ended.result.reason, DoneReason::length);
    EXPECT_LT(ended.result.stats.eval_count, 64);
    EXPECT_GT(ended.result.stats.eval_count, 40);
}

TEST(Session, SameSeedSameSample) {
    auto            model = fixtures::shared_model("tiny.gguf");
    Session         s(model, ctx(256));
    GenerateOptions o;
    o.num_predict          = 24;
    o.sampling.temperature = 1.0f;
    o.sampling.seed        = 42;
    auto a = run(s, "Tell me", o);
    auto b = run(s, "Tell me", o);
    EXPECT_EQ(a.text, b.text);
    o.sampling.seed = 43;
    auto c = run(s, "Tell me", o);
    EXPECT_NE(a.text, c.text);
}

TEST(Session, EveryPieceIsValidUtf8) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session s(model, ctx(512));
    GenerateOptions o;
    o.num_predict          = 200;
    o.sampling.temperature = 1.5f;
    o.sampling.top_k       = 0;
    o.sampling.top_p       = 1.0f;
    o.sampling.seed        = 7;
    std::atomic<bool> cancel{false};
    int               bad = 0;
    fixtures::run_to_end(s, model->tokenize("x", true, true), o,
               [&](std::string_view t) { bad += sanitize_utf8(t) != t; }, cancel);
    EXPECT_EQ(bad, 0);
}

TEST(Session, JsonGrammarGivesJson) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session s(model, ctx(1024));
    // A random-weight model rarely closes a free-form string, so this schema has none: its
    // answer is bounded and must complete, end by itself and validate.
    auto opts    = greedy(400);
    opts.grammar = grammar::schema_to_grammar(
        R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0},)"
        R"("kind":{"enum":["a","b","c"]}},"required":["ok","n","kind"],"additionalProperties":false})");
    opts.end_on_complete_json = true;
    auto out = run(s, "Answer in JSON", opts);
    ASSERT_EQ(out.result.reason, DoneReason::stop) << out.text;
    const auto j = nlohmann::json::parse(out.text);
    EXPECT_TRUE(j.at("ok").is_boolean());
    EXPECT_TRUE(j.at("n").is_number_integer());
    EXPECT_GE(j.at("n").get<int64_t>(), 0);
    EXPECT_TRUE(j.at("kind") == "a" || j.at("kind") == "b" || j.at("kind") == "c");
    EXPECT_EQ(j.size(), 3u);
}

TEST(Session, CancelStopsGeneration) {
    auto              model = fixtures::shared_model("tiny.gguf");
    Session           s(model, ctx(256));
    std::atomic<bool> cancel{false};
    std::thread       t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel = true;
    });
    try {
        fixtures::run_to_end(s, model->tokenize("go", true, true), greedy(-1), [](std::string_view) {}, cancel);
        ADD_FAILURE() << "expected cancellation";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    }
    t.join();
    // The session is still usable afterwards.
    EXPECT_EQ(run(s, "go", greedy(3)).result.stats.eval_count, 3);
}

TEST(Model, LoadErrorsSayWhy) {
    const auto dir = std::filesystem::temp_directory_path() / "specd-model-errors";
    std::filesystem::create_directories(dir);
    auto expect_error = [&](const std::filesystem::path & p, const std::string & needle) {
        try {
            Model::load(p, {});
            ADD_FAILURE() << "loaded " << p;
        } catch (const Error & e) {
            EXPECT_EQ(e.kind(), ErrorKind::bad_request);
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).find(dir.string()), std::string::npos) << "leaks a path: " << e.what();
        }
    };
    expect_error(dir / "missing.gguf", "not found");
    {
        std::ofstream(dir / "text.gguf") << "this is not a model";
    }
    expect_error(dir / "text.gguf", "not a GGUF file");
    {
        gguf_ptr g(gguf_init_empty());
        gguf_set_val_str(g.get(), "general.architecture", "no-such-arch");
        gguf_write_to_file(g.get(), (dir / "arch.gguf").c_str(), false);
    }
    expect_error(dir / "arch.gguf", "unsupported model architecture");
    // A valid header on a (sparse) 1 TiB file: refused before llama.cpp maps it.
    std::filesystem::copy_file(fixtures::fixture("tiny.gguf"), dir / "huge.gguf");
    std::filesystem::resize_file(dir / "huge.gguf", 1ull << 40);
    expect_error(dir / "huge.gguf", "requires more system memory");
    std::filesystem::remove_all(dir);
}

TEST(PromptBuilder, ChatUsesTheModelTemplateAndFallsBack) {
    auto with_tmpl = fixtures::shared_model("tiny.gguf");
    ChatTemplate t1(with_tmpl->get());
    EXPECT_FALSE(t1.source().empty());
    const auto p1 = t1.render({{"system", "S"}, {"user", "U"}}, true);
    EXPECT_NE(p1.find("U"), std::string::npos);
    EXPECT_NE(p1.find("<|user|>"), std::string::npos); // phi-3's own template

    auto no_tmpl = fixtures::shared_model("tiny-spm.gguf");
    ChatTemplate t2(no_tmpl->get());
    EXPECT_TRUE(t2.source().empty());
    EXPECT_NE(t2.render({{"user", "U"}}, true).find("<|im_start|>user"), std::string::npos); // chatml
}
