// Images through the engine: a Session evaluating a prompt with images from engine::Projector.
// The same image at the same place reuses the KV (and the prompt cache's saved states), a
// different one is evaluated from where it starts, and speculation stays exact with images
// in the history (prompt lookup never proposes an image position; the draft model, which has
// no projector, starts after the last image). Qwen2.5-VL's M-RoPE images, whose cells share
// one position, at the end: checked against mtmd's own placement of the same prompt.
#include "../engine/fixtures.h"
#include "cache/prompt_cache.h"
#include "core/error.h"
#include "engine/projector.h"
#include "engine/session.h"
#include "vision/image_decode.h"

#include <gtest/gtest.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include <algorithm>
#include <map>

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
    explicit Vision(const std::string & text = "vision-text.gguf", const std::string & mmproj = "vision-mmproj.gguf") :
        model(fixtures::shared_model(text)), projector(Projector::load(fixtures::fixture(mmproj), *model, 1)) {}

    std::shared_ptr<Model>     model;
    std::unique_ptr<Projector> projector;

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
    EXPECT_EQ(p.images[0].n_tokens, 16u);
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

// Qwen2.5-VL: qwen-vl-text.gguf (qwen2vl, M-RoPE) with qwen-vl-mmproj.gguf. An image's cells
// share one position and the text after it continues max(grid width, height) positions later,
// so every answer is checked against the same prompt placed by mtmd's own helper on a fresh
// context: a position off anywhere (the image, the text after it, a reused or restored prefix,
// a verified draft) changes the attention and the greedy text.
namespace {

// Batches of 64 tokens (the images here are at most 40 tokens): a 151936-token vocabulary
// makes a context's compute buffer as large as its batch times the vocabulary.
constexpr int32_t k_batch = 64;

ContextOptions qwen_ctx() {
    ContextOptions c = ctx();
    c.num_batch      = k_batch;
    return c;
}

struct QwenVision : Vision {
    explicit QwenVision(const std::string & mmproj = "qwen-vl-mmproj.gguf") : Vision("qwen-vl-text.gguf", mmproj) {
        mtmd_context_params mp = mtmd_context_params_default();
        mp.use_gpu             = false;
        mp.print_timings       = false;
        mp.warmup              = false;
        mctx.reset(mtmd_init_from_file(fixtures::fixture(mmproj).c_str(), model->get(), mp));
    }

    mtmd_ptr mctx; // mtmd's own, for the reference

    // What `n` greedy tokens after this prompt are, placed by mtmd (mtmd_helper_eval_chunks) on
    // a context of its own.
    std::vector<llama_token> reference(const std::string & text, const std::vector<ImagePtr> & images, int n,
                                       uint32_t n_ctx = 1024) const {
        std::vector<mtmd_bitmap_ptr>     owned;
        std::vector<const mtmd_bitmap *> bitmaps;
        for (const ImagePtr & img : images) {
            owned.emplace_back(mtmd_bitmap_init(uint32_t(img->width), uint32_t(img->height), img->rgb().data()));
            bitmaps.push_back(owned.back().get());
        }
        mtmd_chunks_ptr chunks(mtmd_input_chunks_init());
        mtmd_input_text in{text.c_str(), text.size(), true, true};
        EXPECT_EQ(mtmd_tokenize(mctx.get(), chunks.get(), &in, bitmaps.data(), bitmaps.size()), 0);
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx                = n_ctx;
        cp.n_batch              = k_batch;
        cp.n_ubatch             = k_batch;
        cp.n_threads            = 1;
        cp.n_threads_batch      = 1;
        context_ptr ctx(llama_init_from_model(model->get(), cp));
        llama_pos   n_past = 0;
        EXPECT_EQ(mtmd_helper_eval_chunks(mctx.get(), ctx.get(), chunks.get(), 0, 0, k_batch, true, &n_past), 0);
        std::vector<llama_token> out;
        const int32_t            n_vocab = llama_vocab_n_tokens(model->vocab());
        for (int i = 0; i < n; ++i) {
            const float *     logits = llama_get_logits_ith(ctx.get(), -1);
            const llama_token t      = llama_token(std::max_element(logits, logits + n_vocab) - logits);
            out.push_back(t);
            if (llama_vocab_is_eog(model->vocab(), t)) break;
            llama_token tok   = t;
            llama_batch batch = llama_batch_get_one(&tok, 1);
            llama_pos   pos   = n_past++;
            batch.pos         = &pos;
            if (llama_decode(ctx.get(), batch) != 0) break; // the context is full
        }
        return out;
    }
};

std::vector<llama_token> answer_tokens(const fixtures::Output & out, const MultimodalPrompt & prompt) {
    const auto & c = out.result.context;
    return {c.begin() + std::ptrdiff_t(prompt.tokens.size()), c.end()};
}

const std::string k_before = "Look at this photograph: ";
const std::string k_after  = " What is in it?";

} // namespace

TEST(QwenVisionSession, AnImageTakesItsGridPositionsAsMtmdPlacesThem) {
    QwenVision v;
    const auto a = image(21, 64, 64);
    const auto p = v.prompt(k_before, {a}, k_after);
    ASSERT_EQ(p.images.size(), 1u);
    EXPECT_EQ(p.images[0].n_tokens, 9u); // 3 x 3 merged patches
    EXPECT_EQ(p.images[0].n_pos, 3u);    // max(3, 3) positions
    EXPECT_NE(p.images[0].n_pos, p.images[0].n_tokens); // every cell at the image's first position

    const auto ref = v.reference(k_before + Projector::marker() + k_after, {a}, 16);
    Session    s(v.model, qwen_ctx());
    const auto first = run(s, p, greedy(16));
    EXPECT_EQ(answer_tokens(first, p), ref);
    EXPECT_EQ(first.result.stats.image_tokens, 9);
    // The image at the same place: the whole prompt but its last token comes from the KV.
    const auto again = run(s, p, greedy(16));
    EXPECT_EQ(again.text, first.text);
    EXPECT_EQ(again.result.stats.prompt_eval_count, 1);
    // Another question after the same image: only the text after the image is evaluated, from
    // the position after the image's (3 after its first, not 9).
    const std::string other_q = " Describe the colours, one by one, and say which is the brightest.";
    const auto        q       = v.prompt(k_before, {a}, other_q);
    const auto        other   = run(s, q, greedy(16));
    EXPECT_EQ(answer_tokens(other, q), v.reference(k_before + Projector::marker() + other_q, {a}, 16));
    EXPECT_LE(size_t(other.result.stats.prompt_eval_count), q.tokens.size() - q.images[0].start - q.images[0].n_tokens);
    // Two images, the second larger, then text: each advances by its own grid.
    const auto b    = image(22, 120, 60);
    const auto two  = v.prompt("Compare ", {a, b}, " please.");
    const auto both = run(s, two, greedy(12));
    EXPECT_EQ(answer_tokens(both, two), v.reference(std::string("Compare ") + Projector::marker() + Projector::marker() +
                                                        " please.",
                                                    {a, b}, 12));
    EXPECT_LT(two.images[1].n_pos, two.images[1].n_tokens);
}

TEST(QwenVisionSession, APromptRestoredFromThePromptCacheAnswersAsMtmdPlacesIt) {
    QwenVision         v;
    memory::Ledger     ledger;
    cache::PromptCache pc(64u << 20, ledger);
    const auto         a    = image(23, 64, 64);
    const std::string  q    = " Question: what colour is the sky, and is the water calm or rough today?";
    const std::string  text = "Here is a long description of a photograph taken at dawn over a quiet harbour: ";
    const auto         p    = v.prompt(text, {a}, q);
    Session            s(v.model, qwen_ctx(), nullptr, {&pc, "qwen"});
    run(s, p, greedy(12));
    run(s, v.prompt("Something else entirely, long enough to be worth saving before it goes away. ", {image(24)}, " ok"),
        greedy(12));
    // The saved state ends with text after the image: its next position is the image's start
    // + 3 + the text's, which a restore must take back as it was.
    const auto back = run(s, p, greedy(12));
    EXPECT_EQ(back.result.stats.prompt_eval_count, 1);
    EXPECT_EQ(pc.stats().hits, 1u);
    EXPECT_EQ(answer_tokens(back, p), v.reference(text + Projector::marker() + q, {a}, 12));
}

TEST(QwenVisionSession, SpeculationIsExactAfterImages) {
    QwenVision  v;
    auto        draft = fixtures::shared_model("qwen-vl-draft.gguf");
    const auto  a     = image(25, 64, 64);
    const std::string before = "the cat sat on the mat. ";
    const std::string after  = " the cat sat on the mat. the cat sat on the mat. the cat";
    const auto  p   = v.prompt(before, {a}, after);
    const auto  ref = v.reference(before + Projector::marker() + after, {a}, 40);
    for (int k : {1, 4}) {
        Session    spec(v.model, qwen_ctx(), draft);
        const auto out = run(spec, p, greedy(40, k));
        EXPECT_EQ(answer_tokens(out, p), ref) << "k=" << k;
        EXPECT_GT(out.result.speculation.drafted, 0);
    }
    Session    lookup(v.model, qwen_ctx());
    const auto out = run(lookup, p, greedy(40, 4));
    EXPECT_EQ(answer_tokens(out, p), ref);
}

// M-RoPE cells cannot be moved (libllama aborts on the shift), so on a Qwen-VL model reaching
// the context's end ends the answer ("length"); a prompt with images over the context is
// refused, a text prompt over it is truncated before it is evaluated. Each answer equals a
// fresh computation of what was kept.
TEST(QwenVisionSession, TheContextsEndEndsTheAnswerAtTheRightPositions) {
    QwenVision     v;
    ContextOptions small;
    small.num_ctx   = 64;
    small.num_batch = 64;
    Session    s(v.model, small);
    const auto a      = image(26, 64, 64);
    const auto p      = v.prompt(k_before, {a}, k_after);
    const auto capped = run(s, p, greedy(200));
    EXPECT_EQ(capped.result.reason, DoneReason::length);
    const size_t answered = capped.result.context.size() - p.tokens.size();
    // Every cell filled, and the last token drawn from the last cell's logits (never decoded).
    EXPECT_EQ(p.tokens.size() + answered, 64u + 1);
    auto ref = v.reference(k_before + Projector::marker() + k_after, {a}, int(answered), 64);
    EXPECT_EQ(answer_tokens(capped, p), ref);
    // The chat goes on with the answer and a new question: over the context with its image.
    std::string history = k_before + Projector::marker() + k_after + capped.text + " And the sky?";
    EXPECT_THROW(run(s, v.projector->tokenize(history, {a}, true), greedy(4)), specd::Error);
    // A text prompt over the context: its start and end are kept, evaluated from position 0.
    std::string long_text = "Some words about the sea.";
    for (int i = 0; i < 12; ++i) long_text += " More words about the harbour, the boats and the light.";
    const auto text   = v.projector->tokenize(long_text, {}, true);
    GenerateOptions o = greedy(8);
    const auto kept   = truncate_prompt(text.tokens, 64, o.num_keep);
    ASSERT_LT(kept.size(), text.tokens.size());
    const auto cut    = run(s, text, o);
    Session    fresh(v.model, small);
    const auto ref_cut = run(fresh, MultimodalPrompt{kept, {}, nullptr}, o);
    EXPECT_EQ(cut.text, ref_cut.text);
}

// Continuous batching: requests with images of different grids on sequences of one context,
// decoded together with drafts, each at its own positions.
TEST(QwenVisionSession, RequestsWithImagesDecodedTogetherAnswerAsAlone) {
    QwenVision     v;
    auto           draft = fixtures::shared_model("qwen-vl-draft.gguf");
    ContextOptions c     = qwen_ctx();
    Session        s(v.model, c, draft, {}, 3);
    struct Ask {
        std::string           before, after;
        std::vector<ImagePtr> images;
        std::string           text;
        GenerateResult        result;
        std::atomic<bool>     cancel{false};
    };
    Ask asks[3];
    asks[0].before = "Look: ", asks[0].after = " the cat sat on the mat. the cat", asks[0].images = {image(27, 64, 64)};
    asks[1].before = "Two pictures: ", asks[1].after = " which is brighter?", asks[1].images = {image(28, 150, 60), image(29)};
    asks[2].before = "A wide one ", asks[2].after = " describe it.", asks[2].images = {image(30, 40, 140)};
    std::map<uint64_t, Ask *> running;
    for (Ask & a : asks) {
        running[s.start(v.prompt(a.before, a.images, a.after), greedy(24, 3), [&a](std::string_view t) { a.text += t; },
                        {}, a.cancel)] = &a;
    }
    while (!running.empty()) {
        for (SeqFinished & f : s.step()) {
            ASSERT_FALSE(f.error);
            running.at(f.id)->result = std::move(f.result);
            running.erase(f.id);
        }
    }
    for (Ask & a : asks) {
        std::string text = a.before;
        for (size_t i = 0; i < a.images.size(); ++i) text += Projector::marker();
        const auto p = v.prompt(a.before, a.images, a.after);
        const std::vector<llama_token> got(a.result.context.begin() + std::ptrdiff_t(p.tokens.size()), a.result.context.end());
        EXPECT_EQ(got, v.reference(text + a.after, a.images, 24)) << a.before;
    }
}

// Qwen2-VL's merger (qwen2-vl-mmproj.gguf): the same grid and positions, its own encoder.
TEST(QwenVisionSession, Qwen2VlMergerPlacesImagesTheSameWay) {
    QwenVision v("qwen2-vl-mmproj.gguf");
    const auto a = image(31, 96, 64);
    const auto p = v.prompt(k_before, {a}, k_after);
    ASSERT_EQ(p.images.size(), 1u);
    EXPECT_EQ(p.images[0].n_tokens, 12u); // 4 x 3 merged patches
    EXPECT_EQ(p.images[0].n_pos, 4u);
    Session    s(v.model, qwen_ctx());
    const auto out = run(s, p, greedy(16));
    EXPECT_EQ(answer_tokens(out, p), v.reference(k_before + Projector::marker() + k_after, {a}, 16));
    const auto again = run(s, p, greedy(16));
    EXPECT_EQ(again.result.stats.prompt_eval_count, 1);
    EXPECT_EQ(again.text, out.text);
}
