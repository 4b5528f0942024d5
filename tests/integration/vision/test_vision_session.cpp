// Images through the engine: a Session evaluating a prompt with images from engine::Projector.
// The same image at the same place reuses the KV (and the prompt cache's saved states), a
// different one is evaluated from where it starts, and speculation stays exact with images
// in the history (prompt lookup never proposes an image position; the draft model, which has
// no projector, sees a filler token there).
#include "../engine/fixtures.h"
#include "cache/prompt_cache.h"
#include "core/error.h"
#include "engine/projector.h"
#include "engine/session.h"
#include "vision/image_decode.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::engine;

namespace {

// A 24-bit BMP of a pattern that depends on `seed`.
std::vector<uint8_t> bmp(int w, int h, int seed) {
    const int            row = (w * 3 + 3) / 4 * 4;
    std::vector<uint8_t> b(54 + size_t(row) * h, 0);
    auto put32 = [&](size_t at, uint32_t v) { for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i)); };
    b[0] = 'B', b[1] = 'M';
    put32(2, uint32_t(b.size()));
    put32(10, 54);
    put32(14, 40);
    put32(18, uint32_t(w));
    put32(22, uint32_t(h));
    b[26] = 1, b[28] = 24;
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            uint8_t * p = &b[54 + size_t(h - 1 - y) * row + size_t(x) * 3];
            p[0] = uint8_t(x * 7 + seed * 31), p[1] = uint8_t(y * 5 + seed), p[2] = uint8_t((x ^ y) + seed * 3);
        }
    }
    return b;
}

ImagePtr image(int seed, int w = 48, int h = 40) {
    return std::make_shared<const DecodedImage>(vision::decode_image(bmp(w, h, seed), {}, 1));
}

GenerateOptions greedy(int n, std::optional<int> fixed_k = std::nullopt) {
    GenerateOptions o = fixtures::greedy(n);
    o.draft_fixed_k   = fixed_k;
    return o;
}

ContextOptions ctx() {
    ContextOptions c;
    c.num_ctx = 1024;
    return c;
}

struct Vision {
    std::shared_ptr<Model>     model = fixtures::shared_model("vision-text.gguf");
    std::unique_ptr<Projector> projector = Projector::load(fixtures::fixture("vision-mmproj.gguf"), *model, 1);

    MultimodalPrompt prompt(const std::string & before, const std::vector<ImagePtr> & images, const std::string & after) const {
        std::string text = before;
        for (size_t i = 0; i < images.size(); ++i) text += Projector::marker();
        return projector->tokenize(text + after, images, true);
    }
};

fixtures::Output run(Session & s, MultimodalPrompt p, const GenerateOptions & o) {
    fixtures::Output  out;
    std::atomic<bool> cancel{false};
    out.result = fixtures::run_to_end(s, std::move(p), o, [&](std::string_view t) { out.text += t; }, cancel);
    return out;
}

} // namespace

TEST(VisionSession, TheSameImageReusesTheKvAndAnotherIsEvaluatedFromItsStart) {
    Vision     v;
    const auto a = image(1);
    const auto b = image(2);
    const auto p = v.prompt("Look: ", {a}, " What is it?");
    ASSERT_EQ(p.images.size(), 1u);
    EXPECT_EQ(p.images[0].n_pos, 16u);
    EXPECT_TRUE(is_image_token(p.tokens[p.images[0].start]));

    Session fresh_a(v.model, ctx());
    const auto ref_a = run(fresh_a, v.prompt("Look: ", {a}, " What is it?"), greedy(16));
    Session fresh_b(v.model, ctx());
    const auto ref_b = run(fresh_b, v.prompt("Look: ", {b}, " What is it?"), greedy(16));
    EXPECT_NE(ref_a.text, ref_b.text); // the image reaches the model

    Session    s(v.model, ctx());
    const auto first = run(s, v.prompt("Look: ", {a}, " What is it?"), greedy(16));
    EXPECT_EQ(first.text, ref_a.text);
    const auto again = run(s, v.prompt("Look: ", {a}, " What is it?"), greedy(16));
    EXPECT_EQ(again.text, ref_a.text);
    EXPECT_EQ(again.result.stats.prompt_eval_count, 1);
    const auto other = run(s, v.prompt("Look: ", {b}, " What is it?"), greedy(16));
    EXPECT_EQ(other.text, ref_b.text);
    // From the image's first position on: the image and the text after it.
    EXPECT_EQ(size_t(other.result.stats.prompt_eval_count), p.tokens.size() - p.images[0].start);
    // `context` for the client holds no image positions.
    for (llama_token t : text_tokens(other.result.context)) EXPECT_GE(t, 0);
}

TEST(VisionSession, APromptWithImagesIsRestoredFromThePromptCache) {
    Vision             v;
    memory::Ledger     ledger;
    cache::PromptCache pc(64u << 20, ledger);
    const auto         a    = image(3);
    const auto         make = [&](const ImagePtr & img, const std::string & q) {
        return v.prompt("Here is a long description of a photograph taken at dawn over a quiet harbour: ",
                        {img}, " Question: " + q);
    };
    Session    fresh(v.model, ctx());
    const auto ref = run(fresh, make(a, "what colour is the sky?"), greedy(12));

    Session s(v.model, ctx(), nullptr, {&pc, "vision"});
    run(s, make(a, "what colour is the sky?"), greedy(12));
    run(s, v.prompt("Something else entirely, long enough to be worth saving before it goes away. ", {image(9)}, " ok"),
        greedy(12));
    const auto back = run(s, make(a, "what colour is the sky?"), greedy(12));
    EXPECT_EQ(back.text, ref.text);
    EXPECT_EQ(back.result.stats.prompt_eval_count, 1);
    EXPECT_EQ(pc.stats().hits, 1u);
    // Another image at the same place: only the text before it can come from the cache.
    const auto other = run(s, make(image(4), "what colour is the sky?"), greedy(12));
    const auto p     = make(image(4), "what colour is the sky?");
    EXPECT_EQ(size_t(other.result.stats.prompt_eval_count), p.tokens.size() - p.images[0].start);
}

TEST(VisionSession, SpeculationIsExactWithImagesInTheHistory) {
    // The pair's target has the projector's width too: drafts from the draft model (which
    // sees a filler token at image positions) and from prompt lookup over a history with
    // images.
    auto       target    = fixtures::shared_model("pair-target.gguf");
    auto       draft     = fixtures::shared_model("pair-draft.gguf");
    auto       projector = Projector::load(fixtures::fixture("vision-mmproj.gguf"), *target, 1);
    const auto make = [&] {
        std::string text = std::string("the cat sat on the mat. ") + Projector::marker() +
                           " the cat sat on the mat. the cat sat on the mat. the cat";
        return projector->tokenize(text, {image(5)}, true);
    };
    Session    plain(target, ctx());
    const auto ref = run(plain, make(), greedy(48, 0));
    for (int k : {1, 4}) {
        Session    spec(target, ctx(), draft);
        const auto out = run(spec, make(), greedy(48, k));
        EXPECT_EQ(out.text, ref.text) << "k=" << k;
        EXPECT_GT(out.result.speculation.drafted, 0);
    }
    Session    lookup(target, ctx());
    const auto out = run(lookup, make(), greedy(48, 4));
    EXPECT_EQ(out.text, ref.text);
}

TEST(VisionSession, APromptWithImagesIsNeverTruncated) {
    Vision         v;
    ContextOptions small;
    small.num_ctx = 24;
    Session s(v.model, small);
    std::string long_text;
    for (int i = 0; i < 10; ++i) long_text += " more words here";
    EXPECT_THROW(run(s, v.prompt("x", {image(6)}, long_text), greedy(4)), specd::Error);
}
