// The vision fixtures from tests/make-fixtures.sh (vision-text.gguf, a llama model, and
// vision-mmproj.gguf, a gemma3 projector for it; gemma4-text.gguf and gemma4-mmproj.gguf, a
// gemma4 text model and its gemma4v projector; qwen-vl-text.gguf and qwen-vl-mmproj.gguf,
// Qwen2.5-VL's, at the end) driven through the pinned mtmd the
// way the server will: load both, tokenize a prompt with an image, evaluate the chunks, decode.
//
// What the pinned mtmd asks of its caller, pinned here:
// - gemma3 images are decoded with non-causal attention (mtmd_decode_use_non_causal), and
//   libllama aborts (GGML_ASSERT, not an error code) when a non-causal decode has more tokens
//   than n_ubatch. The image must also go in one decode call to attend over all of itself, so
//   n_batch and n_ubatch must both hold the largest image chunk.
// - <start_of_image> / <end_of_image> are added as text around the image; with a vocabulary
//   that lacks them (phi-3's) they are ordinary text tokens.
// - Every image, whatever its size, is resized (bilinear, aspect kept, black padding) to the
//   projector's image_size square, so it is always the same number of tokens.

#include <gtest/gtest.h>

#include <llama-cpp.h>
#include <mtmd-helper.h>
#include <mtmd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace {

// Owning handles for the mtmd objects (local until the engine has its own).
struct mtmd_context_free {
    void operator()(mtmd_context * ctx) const { mtmd_free(ctx); }
};
struct mtmd_bitmap_free_fn {
    void operator()(mtmd_bitmap * bitmap) const { mtmd_bitmap_free(bitmap); }
};
struct mtmd_input_chunks_free_fn {
    void operator()(mtmd_input_chunks * chunks) const { mtmd_input_chunks_free(chunks); }
};
using mtmd_ptr   = std::unique_ptr<mtmd_context, mtmd_context_free>;
using bitmap_ptr = std::unique_ptr<mtmd_bitmap, mtmd_bitmap_free_fn>;
using chunks_ptr = std::unique_ptr<mtmd_input_chunks, mtmd_input_chunks_free_fn>;

// The fixture's shape (tests/make-fixtures.sh): 64x64 pixels, 4x4 patches, pooled 4x4.
constexpr int32_t image_size     = 64;
constexpr size_t  n_image_tokens = 16;

std::string fixture_path(const char * name) {
    const char * dir = std::getenv("SPECD_FIXTURES");
    return dir ? (std::filesystem::path(dir) / name).string() : std::string();
}

void log_errors_only(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::fputs(text, stderr);
    }
}

// (ny, nx, 3) RGB bytes; every channel varies, so a transposed or mirrored resize shows.
std::vector<unsigned char> gradient(uint32_t nx, uint32_t ny) {
    std::vector<unsigned char> rgb(size_t(nx) * ny * 3);
    for (uint32_t y = 0; y < ny; ++y) {
        for (uint32_t x = 0; x < nx; ++x) {
            unsigned char * p = &rgb[(size_t(y) * nx + x) * 3];
            p[0] = (unsigned char) (x * 255 / std::max(nx - 1, 1u));
            p[1] = (unsigned char) (y * 255 / std::max(ny - 1, 1u));
            p[2] = (unsigned char) ((x + 2 * y) % 256);
        }
    }
    return rgb;
}

bitmap_ptr bitmap(uint32_t nx, uint32_t ny, const std::vector<unsigned char> & rgb) {
    return bitmap_ptr(mtmd_bitmap_init(nx, ny, rgb.data()));
}

bool all_finite(const float * v, int32_t n) {
    return std::all_of(v, v + n, [](float x) { return std::isfinite(x); });
}

// The largest chunk: with a non-causal projector, n_batch and n_ubatch must hold it.
int32_t largest_chunk(const mtmd_input_chunks * chunks) {
    size_t n = 0;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
        n = std::max(n, mtmd_input_chunk_get_n_tokens(mtmd_input_chunks_get(chunks, i)));
    }
    return int32_t(n);
}

std::string detokenize(const llama_vocab * vocab, const mtmd_input_chunk * chunk) {
    size_t n = 0;
    const llama_token * tokens = mtmd_input_chunk_get_tokens_text(chunk, &n);
    std::string text(n * 16 + 16, '\0');
    const int32_t len = llama_detokenize(vocab, tokens, int32_t(n), text.data(), int32_t(text.size()),
                                         /*remove_special =*/false, /*unparse_special =*/true);
    text.resize(size_t(std::max(len, 0)));
    return text;
}

// What an eval left behind: the last position's logits, then those after one more token.
struct eval_result {
    llama_pos          n_past = 0;
    std::vector<float> logits;      // (n_vocab) after the prompt
    std::vector<float> next_logits; // (n_vocab) after the greedy next token
};

class ProjectorFixture : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        llama_log_set(log_errors_only, nullptr);
        mtmd_log_set(log_errors_only, nullptr);
        mtmd_helper_log_set(log_errors_only, nullptr);
        llama_backend_init();
    }

    // The text model and projector a fixture loads; gemma3's unless a subclass names others.
    ProjectorFixture(const char * text_file = "vision-text.gguf", const char * mmproj_file = "vision-mmproj.gguf",
                     bool warmup = true) :
        text_file_(text_file), mmproj_file_(mmproj_file), warmup_(warmup) {}

    void SetUp() override {
        if (!std::getenv("SPECD_FIXTURES")) {
            GTEST_SKIP() << "SPECD_FIXTURES is not set (ctest sets it after fixtures.generate)";
        }
        llama_model_params params = llama_model_default_params();
        params.n_gpu_layers = 0;
        model_.reset(llama_model_load_from_file(fixture_path(text_file_).c_str(), params));
        ASSERT_TRUE(model_) << "cannot load " << fixture_path(text_file_);
        vision_ = init_mtmd(nullptr, nullptr);
        ASSERT_TRUE(vision_) << "cannot load " << fixture_path(mmproj_file_);
    }

    mtmd_ptr init_mtmd(ggml_backend_sched_eval_callback cb_eval, void * cb_data) const {
        mtmd_context_params params = mtmd_context_params_default();
        params.use_gpu           = false;
        params.n_threads         = 2;
        params.print_timings     = false;
        params.warmup            = warmup_;
        params.cb_eval           = cb_eval;
        params.cb_eval_user_data = cb_data;
        return mtmd_ptr(mtmd_init_from_file(fixture_path(mmproj_file_).c_str(), model_.get(), params));
    }

    chunks_ptr tokenize(mtmd_context * vision, const std::string & prompt, const mtmd_bitmap * image) const {
        chunks_ptr chunks(mtmd_input_chunks_init());
        const mtmd_input_text text = {prompt.c_str(), prompt.size(), /*add_special =*/true, /*parse_special =*/true};
        const int32_t rc = mtmd_tokenize(vision, chunks.get(), &text, &image, 1);
        EXPECT_EQ(rc, 0) << "mtmd_tokenize";
        return rc == 0 ? std::move(chunks) : chunks_ptr();
    }

    // Evaluates `chunks` in a context with these n_batch and n_ubatch (default: n_batch), then
    // decodes the greedy next token. Empty logits when anything failed.
    eval_result eval(const mtmd_input_chunks * chunks, int32_t n_batch, int32_t n_ubatch = 0) const {
        llama_context_params params = llama_context_default_params();
        params.n_ctx     = 512;
        params.n_batch   = uint32_t(n_batch);
        params.n_ubatch  = uint32_t(n_ubatch > 0 ? n_ubatch : n_batch);
        params.n_threads = params.n_threads_batch = 2;
        params.no_perf   = true;
        llama_context_ptr ctx(llama_init_from_model(model_.get(), params));
        eval_result out;
        if (!ctx) {
            ADD_FAILURE() << "cannot create a context";
            return out;
        }
        const int32_t rc = mtmd_helper_eval_chunks(vision_.get(), ctx.get(), chunks, /*n_past =*/0, /*seq_id =*/0,
                                                   n_batch, /*logits_last =*/true, &out.n_past);
        if (rc != 0) {
            ADD_FAILURE() << "mtmd_helper_eval_chunks returned " << rc;
            return out;
        }
        const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model_.get()));
        const float * logits = llama_get_logits_ith(ctx.get(), -1);
        out.logits.assign(logits, logits + n_vocab);

        llama_token next = llama_token(std::max_element(logits, logits + n_vocab) - logits);
        if (llama_decode(ctx.get(), llama_batch_get_one(&next, 1)) != 0) {
            ADD_FAILURE() << "decoding the next token failed";
            return out;
        }
        const float * next_logits = llama_get_logits_ith(ctx.get(), -1);
        out.next_logits.assign(next_logits, next_logits + n_vocab);
        return out;
    }

    static std::string image_prompt() {
        return std::string("Describe this image: ") + mtmd_default_marker() + "\nWhat is in it?";
    }

    // The image chunk of image_prompt() for an nx x ny gradient (null when the prompt did not
    // become text, image, text).
    struct tokenized {
        chunks_ptr               chunks;
        const mtmd_input_chunk * image = nullptr;
    };
    tokenized tokenize_gradient(mtmd_context * vision, uint32_t nx, uint32_t ny) const {
        const std::vector<unsigned char> rgb = gradient(nx, ny);
        bitmap_ptr image = bitmap(nx, ny, rgb);
        tokenized out;
        out.chunks = tokenize(vision, image_prompt(), image.get());
        if (out.chunks && mtmd_input_chunks_size(out.chunks.get()) == 3) {
            out.image = mtmd_input_chunks_get(out.chunks.get(), 1);
        }
        return out;
    }

    const char *    text_file_;
    const char *    mmproj_file_;
    bool            warmup_;
    llama_model_ptr model_;
    mtmd_ptr        vision_;
};

TEST_F(ProjectorFixture, LoadsWithTheTextModel) {
    EXPECT_TRUE(mtmd_support_vision(vision_.get()));
    EXPECT_FALSE(mtmd_support_audio(vision_.get()));
    EXPECT_FALSE(mtmd_decode_use_mrope(vision_.get()));
    EXPECT_EQ(llama_model_n_embd(model_.get()), 64) << "the projector writes n_embd_text 64";
    EXPECT_STREQ(mtmd_get_marker(vision_.get()), mtmd_default_marker());
}

TEST_F(ProjectorFixture, ImagePromptEvaluatesAndDecodes) {
    const std::vector<unsigned char> rgb = gradient(64, 48);
    bitmap_ptr image = bitmap(64, 48, rgb);
    ASSERT_TRUE(image);
    chunks_ptr chunks = tokenize(vision_.get(), image_prompt(), image.get());
    ASSERT_TRUE(chunks);

    ASSERT_EQ(mtmd_input_chunks_size(chunks.get()), 3u);
    const mtmd_input_chunk * before = mtmd_input_chunks_get(chunks.get(), 0);
    const mtmd_input_chunk * img    = mtmd_input_chunks_get(chunks.get(), 1);
    const mtmd_input_chunk * after  = mtmd_input_chunks_get(chunks.get(), 2);
    EXPECT_EQ(mtmd_input_chunk_get_type(before), MTMD_INPUT_CHUNK_TYPE_TEXT);
    EXPECT_EQ(mtmd_input_chunk_get_type(img), MTMD_INPUT_CHUNK_TYPE_IMAGE);
    EXPECT_EQ(mtmd_input_chunk_get_type(after), MTMD_INPUT_CHUNK_TYPE_TEXT);
    EXPECT_EQ(mtmd_input_chunk_get_n_tokens(img), n_image_tokens);
    EXPECT_EQ(mtmd_input_chunk_get_n_pos(img), llama_pos(n_image_tokens)) << "one position per token (no M-RoPE)";
    EXPECT_TRUE(mtmd_decode_use_non_causal(vision_.get(), img));

    // gemma3's image markers, added as text (phi-3's vocabulary has no such special tokens).
    const llama_vocab * vocab = llama_model_get_vocab(model_.get());
    const std::string text_before = detokenize(vocab, before);
    const std::string text_after  = detokenize(vocab, after);
    EXPECT_TRUE(text_before.ends_with("<start_of_image>")) << text_before;
    EXPECT_TRUE(text_after.starts_with("<end_of_image>")) << text_after;

    const eval_result result = eval(chunks.get(), largest_chunk(chunks.get()));
    ASSERT_FALSE(result.next_logits.empty());
    EXPECT_EQ(result.n_past, llama_pos(mtmd_helper_get_n_pos(chunks.get())));
    EXPECT_TRUE(all_finite(result.logits.data(), int32_t(result.logits.size())));
    EXPECT_TRUE(all_finite(result.next_logits.data(), int32_t(result.next_logits.size())));
}

// ~2 Mpx: the preprocessor shrinks it to the same 16 tokens. n_batch = n_ubatch = the image's
// tokens, smaller than the text around it, so the text is split over several decodes while
// the image (non-causal) goes in one.
TEST_F(ProjectorFixture, LargeImageEvaluatesWithABatchSizedForTheImage) {
    const uint32_t nx = 1600, ny = 1200;
    const std::vector<unsigned char> rgb = gradient(nx, ny);
    bitmap_ptr image = bitmap(nx, ny, rgb);
    ASSERT_TRUE(image);
    std::string prompt = "A long description before the picture, so that the text needs more than one batch. ";
    prompt += image_prompt();
    chunks_ptr chunks = tokenize(vision_.get(), prompt, image.get());
    ASSERT_TRUE(chunks);
    ASSERT_EQ(mtmd_input_chunks_size(chunks.get()), 3u);
    ASSERT_EQ(mtmd_input_chunk_get_n_tokens(mtmd_input_chunks_get(chunks.get(), 1)), n_image_tokens);
    ASSERT_GT(mtmd_input_chunk_get_n_tokens(mtmd_input_chunks_get(chunks.get(), 0)), n_image_tokens);

    const eval_result result = eval(chunks.get(), int32_t(n_image_tokens));
    ASSERT_FALSE(result.next_logits.empty());
    EXPECT_TRUE(all_finite(result.logits.data(), int32_t(result.logits.size())));
    EXPECT_TRUE(all_finite(result.next_logits.data(), int32_t(result.next_logits.size())));
}

// Why the batch sizes matter: an image chunk handed to llama_decode whole (n_batch 16) with a
// smaller n_ubatch kills the process inside libllama. The server must size n_ubatch for the
// largest image before it accepts one; if this test fails, libllama stopped aborting.
TEST_F(ProjectorFixture, ImageLargerThanTheMicroBatchAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const std::vector<unsigned char> rgb = gradient(64, 48);
    bitmap_ptr image = bitmap(64, 48, rgb);
    chunks_ptr chunks = tokenize(vision_.get(), image_prompt(), image.get());
    ASSERT_TRUE(chunks);
    const int32_t n_batch = largest_chunk(chunks.get());
    ASSERT_EQ(n_batch, int32_t(n_image_tokens));
    // Without it ggml attaches gdb to print a backtrace, which takes seconds. The threadsafe
    // style re-runs this binary, so the child inherits it.
    const bool had_no_backtrace = std::getenv("GGML_NO_BACKTRACE") != nullptr;
    setenv("GGML_NO_BACKTRACE", "1", 0);
    EXPECT_DEATH(eval(chunks.get(), n_batch, n_batch / 2), "non-causal attention requires n_ubatch >= n_tokens");
    if (!had_no_backtrace) {
        unsetenv("GGML_NO_BACKTRACE");
    }
}

// The image embeddings reach the text model: the same prompt with another image gives other
// logits.
TEST_F(ProjectorFixture, DifferentImagesGiveDifferentLogits) {
    const std::vector<unsigned char> rgb_a = gradient(64, 48);
    const std::vector<unsigned char> rgb_b(64 * 48 * 3, 200);
    bitmap_ptr image_a = bitmap(64, 48, rgb_a);
    bitmap_ptr image_b = bitmap(64, 48, rgb_b);
    chunks_ptr chunks_a = tokenize(vision_.get(), image_prompt(), image_a.get());
    chunks_ptr chunks_b = tokenize(vision_.get(), image_prompt(), image_b.get());
    ASSERT_TRUE(chunks_a && chunks_b);
    const eval_result a = eval(chunks_a.get(), largest_chunk(chunks_a.get()));
    const eval_result b = eval(chunks_b.get(), largest_chunk(chunks_b.get()));
    ASSERT_FALSE(a.logits.empty() || b.logits.empty());
    float max_diff = 0.0f;
    for (size_t i = 0; i < a.logits.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(a.logits[i] - b.logits[i]));
    }
    EXPECT_GT(max_diff, 1e-3f);
}

// The pixels the ViT sees: "inp_raw", the input of its patch convolution's im2col, captured
// through mtmd's graph callback (the public way in; inp_raw itself is a leaf, not a node).
struct preprocessed_capture {
    std::vector<float> pixels; // (3, ny, nx)
    int64_t            nx = 0;
    int64_t            ny = 0;
};

bool capture_preprocessed(ggml_tensor * t, bool ask, void * user_data) {
    const bool wanted = t->op == GGML_OP_IM2COL && t->src[1] && std::strcmp(t->src[1]->name, "inp_raw") == 0;
    if (ask) {
        return wanted;
    }
    if (wanted) {
        auto * out = static_cast<preprocessed_capture *>(user_data);
        const ggml_tensor * raw = t->src[1];
        out->nx = raw->ne[0];
        out->ny = raw->ne[1];
        out->pixels.resize(size_t(ggml_nelements(raw)));
        ggml_backend_tensor_get(raw, out->pixels.data(), 0, ggml_nbytes(raw));
    }
    return true;
}

// gemma4v's pixels enter inp_raw in [0, 1] (mean 0, std 1) and its graph maps them to
// [-1, 1] before the patch convolution: that scaled tensor is what the ViT sees, captured.
bool capture_gemma4_input(ggml_tensor * t, bool ask, void * user_data) {
    const bool wanted = t->op == GGML_OP_SCALE && t->src[0] && std::strcmp(t->src[0]->name, "inp_raw") == 0;
    if (ask) {
        return wanted;
    }
    if (wanted) {
        auto * out = static_cast<preprocessed_capture *>(user_data);
        out->nx = t->ne[0];
        out->ny = t->ne[1];
        out->pixels.resize(size_t(ggml_nelements(t)));
        ggml_backend_tensor_get(t, out->pixels.data(), 0, ggml_nbytes(t));
    }
    return true;
}

// Pins the pinned llama.cpp's gemma3 preprocessing of a 100x60 gradient: resized to fit
// 64x64 with its aspect kept (bilinear, to 64x39), centred on black (rows 0-11 and 51-63),
// normalised with mean = std = 0.5 so black is -1. (Hugging Face's Gemma 3 processor stretches
// to the square instead.) A different resize or padding in a newer llama.cpp changes the
// checksums; then re-record them here on purpose.
TEST_F(ProjectorFixture, PreprocessingIsPinned) {
    preprocessed_capture captured;
    mtmd_ptr vision = init_mtmd(capture_preprocessed, &captured);
    ASSERT_TRUE(vision);

    const std::vector<unsigned char> rgb = gradient(100, 60);
    bitmap_ptr image = bitmap(100, 60, rgb);
    chunks_ptr chunks = tokenize(vision.get(), image_prompt(), image.get());
    ASSERT_TRUE(chunks);
    const mtmd_input_chunk * img = mtmd_input_chunks_get(chunks.get(), 1);
    ASSERT_EQ(mtmd_input_chunk_get_type(img), MTMD_INPUT_CHUNK_TYPE_IMAGE);
    const mtmd_image_tokens * tokens = mtmd_input_chunk_get_tokens_image(img);
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(mtmd_image_tokens_get_n_tokens(tokens), n_image_tokens);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    // Without M-RoPE mtmd keeps no grid: nx is the token count and ny 1.
    EXPECT_EQ(mtmd_image_tokens_get_nx(tokens), n_image_tokens);
    EXPECT_EQ(mtmd_image_tokens_get_ny(tokens), 1u);
#pragma GCC diagnostic pop

    captured = {}; // drop what the warmup encode showed
    ASSERT_EQ(mtmd_encode_chunk(vision.get(), img), 0);
    ASSERT_EQ(captured.nx, image_size);
    ASSERT_EQ(captured.ny, image_size);
    const auto at = [&](int c, int y, int x) {
        return captured.pixels[(size_t(c) * image_size + size_t(y)) * image_size + size_t(x)];
    };

    int n_pad_rows = 0;
    for (int y = 0; y < image_size; ++y) {
        bool black = true;
        for (int c = 0; c < 3; ++c) {
            for (int x = 0; x < image_size; ++x) {
                black = black && at(c, y, x) == -1.0f;
            }
        }
        const bool pad = y < 12 || y >= 51;
        EXPECT_EQ(black, pad) << "row " << y;
        n_pad_rows += black;
    }
    EXPECT_EQ(n_pad_rows, 25);

    // Every value is a normalised byte, (level / 255 - 0.5) / 0.5; the checksums are over the
    // levels, so they are exact.
    int64_t levels = 0, weighted = 0;
    for (size_t i = 0; i < captured.pixels.size(); ++i) {
        const float   v     = captured.pixels[i];
        const int64_t level = std::lround((double(v) + 1.0) * 127.5);
        ASSERT_NEAR(v, (float(level) / 255.0f - 0.5f) / 0.5f, 1e-6f) << "value " << i << " is not a normalised byte";
        levels += level;
        weighted += level * int64_t(i % 97 + 1);
    }
    EXPECT_EQ(levels, 905006);
    EXPECT_EQ(weighted, 44376238);
}

// gemma4: the gemma4-text.gguf and gemma4-mmproj.gguf fixtures. The pinned mtmd resizes a
// gemma4v image (bicubic, aspect kept, no padding) to a grid of 48x48-pixel cells (patch 16,
// pool 3), between 70 and 1120 of them, one token per cell; places <|image> and <image|>
// around it, the vocabulary's own control tokens; and decodes it non-causally.
class Gemma4Fixture : public ProjectorFixture {
protected:
    Gemma4Fixture() : ProjectorFixture("gemma4-text.gguf", "gemma4-mmproj.gguf", /*warmup =*/false) {}
};

TEST_F(Gemma4Fixture, LoadsAndMarksImagesWithTheVocabularysTokens) {
    EXPECT_TRUE(mtmd_support_vision(vision_.get()));
    EXPECT_FALSE(mtmd_decode_use_mrope(vision_.get()));
    EXPECT_TRUE(mtmd_decode_use_non_causal(vision_.get(), nullptr));
    const tokenized t = tokenize_gradient(vision_.get(), 64, 64);
    ASSERT_NE(t.image, nullptr);
    const llama_vocab * vocab = llama_model_get_vocab(model_.get());
    const std::string before = detokenize(vocab, mtmd_input_chunks_get(t.chunks.get(), 0));
    const std::string after  = detokenize(vocab, mtmd_input_chunks_get(t.chunks.get(), 2));
    EXPECT_TRUE(before.ends_with("<|image>")) << before;
    EXPECT_TRUE(after.starts_with("<image|>")) << after;
    size_t n = 0;
    const llama_token * last = mtmd_input_chunk_get_tokens_text(mtmd_input_chunks_get(t.chunks.get(), 0), &n);
    ASSERT_GT(n, 0u);
    EXPECT_EQ(last[n - 1], 255999) << "<|image> is one token of the gemma-4 vocabulary";
}

// Tokens per image follow its size and aspect, as the real model's do (70 to 1120).
TEST_F(Gemma4Fixture, TokensPerImageFollowItsSize) {
    const auto n_tokens = [&](uint32_t nx, uint32_t ny) {
        const tokenized t = tokenize_gradient(vision_.get(), nx, ny);
        return t.image ? mtmd_input_chunk_get_n_tokens(t.image) : size_t(0);
    };
    EXPECT_EQ(n_tokens(64, 64), 81u);     // scaled up to the minimum: 9 x 9 cells
    EXPECT_EQ(n_tokens(1920, 1080), 920u); // 40 x 23
    EXPECT_EQ(n_tokens(4000, 3000), 1064u); // 38 x 28: scaled down under the maximum
    EXPECT_GE(n_tokens(100, 60), 70u);
    EXPECT_LE(n_tokens(3500, 2300), 1120u);
}

TEST_F(Gemma4Fixture, ImagePromptEvaluatesAndDecodes) {
    const tokenized t = tokenize_gradient(vision_.get(), 200, 120);
    ASSERT_NE(t.image, nullptr);
    EXPECT_EQ(mtmd_input_chunk_get_n_pos(t.image), llama_pos(mtmd_input_chunk_get_n_tokens(t.image)));
    const eval_result r = eval(t.chunks.get(), largest_chunk(t.chunks.get()));
    ASSERT_FALSE(r.logits.empty());
    EXPECT_TRUE(all_finite(r.logits.data(), int32_t(r.logits.size())));
    EXPECT_TRUE(all_finite(r.next_logits.data(), int32_t(r.next_logits.size())));
}

// Pins the pinned llama.cpp's gemma4v preprocessing of a 100x60 gradient: the size it is
// resized to (11 x 7 cells of 48 pixels, stretched to them: no padding) and checksums of its
// pixels, byte levels mapped to [-1, 1]. A different resize in a newer llama.cpp (the bilinear-to-bicubic change gemma4 went
// through) changes them; then re-record them here on purpose.
TEST_F(Gemma4Fixture, PreprocessingIsPinned) {
    preprocessed_capture captured;
    mtmd_ptr vision = init_mtmd(capture_gemma4_input, &captured);
    ASSERT_TRUE(vision);
    const tokenized t = tokenize_gradient(vision.get(), 100, 60);
    ASSERT_NE(t.image, nullptr);
    ASSERT_EQ(mtmd_encode_chunk(vision.get(), t.image), 0);
    EXPECT_EQ(captured.nx, 528);
    EXPECT_EQ(captured.ny, 336);
    EXPECT_EQ(mtmd_input_chunk_get_n_tokens(t.image), size_t(captured.nx / 48 * (captured.ny / 48)));
    int64_t levels = 0, weighted = 0, lowest = 255, highest = 0;
    for (size_t i = 0; i < captured.pixels.size(); ++i) {
        const float   v     = captured.pixels[i];
        const int64_t level = std::lround((double(v) + 1.0) * 127.5);
        ASSERT_NEAR(v, 2.0f * float(level) / 255.0f - 1.0f, 1e-6f) << "value " << i << " is not a mapped byte";
        levels += level;
        weighted += level * int64_t(i % 97 + 1);
        lowest  = std::min(lowest, level);
        highest = std::max(highest, level);
    }
    EXPECT_EQ(lowest, 0);
    EXPECT_EQ(highest, 255);
    EXPECT_EQ(levels, 60680455);
    EXPECT_EQ(weighted, 2973014888);
}

// Qwen2.5-VL: qwen-vl-text.gguf (qwen2vl, M-RoPE) and qwen-vl-mmproj.gguf (its merger). Pinned
// here is what the engine follows (engine/kv_sequence, test_vision_session.cpp): an image
// chunk of nx x ny tokens takes max(nx, ny) positions, not nx * ny, and is decoded causally.
class QwenVlFixture : public ProjectorFixture {
protected:
    // Its warmup would reserve for a 1288x1288 image.
    QwenVlFixture() : ProjectorFixture("qwen-vl-text.gguf", "qwen-vl-mmproj.gguf", /*warmup =*/false) {}
};

TEST_F(QwenVlFixture, ImagesTakeFewerPositionsThanTokens) {
    EXPECT_TRUE(mtmd_decode_use_mrope(vision_.get()));
    EXPECT_FALSE(mtmd_decode_use_non_causal(vision_.get(), nullptr));
    const auto counts = [&](uint32_t nx, uint32_t ny) {
        const tokenized t = tokenize_gradient(vision_.get(), nx, ny);
        if (!t.image) return std::pair<size_t, llama_pos>{0, 0};
        return std::pair<size_t, llama_pos>{mtmd_input_chunk_get_n_tokens(t.image), mtmd_input_chunk_get_n_pos(t.image)};
    };
    EXPECT_EQ(counts(64, 64), (std::pair<size_t, llama_pos>{9, 3}));         // 84x84: 3 x 3 tokens
    EXPECT_EQ(counts(1920, 1080), (std::pair<size_t, llama_pos>{2691, 69})); // 69 x 39 tokens
}

TEST_F(QwenVlFixture, ImagePromptEvaluatesWithGridPositions) {
    const tokenized t      = tokenize_gradient(vision_.get(), 64, 64);
    const auto *    chunks = t.chunks.get();
    ASSERT_TRUE(chunks);
    size_t n_tokens = 0;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
        n_tokens += mtmd_input_chunk_get_n_tokens(mtmd_input_chunks_get(chunks, i));
    }
    const eval_result r = eval(chunks, 64);
    ASSERT_FALSE(r.logits.empty());
    EXPECT_TRUE(all_finite(r.logits.data(), int32_t(r.logits.size())));
    // The text after the image continues from the image's positions: 6 fewer than its tokens.
    EXPECT_EQ(r.n_past, llama_pos(mtmd_helper_get_n_pos(chunks)));
    EXPECT_EQ(size_t(r.n_past) + 6, n_tokens);
}

} // namespace
