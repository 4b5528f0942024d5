// Quantizing the tiny fixture with llama.cpp's quantizer: the output loads and says what it
// is, and already-quantized sources are refused before anything is written.
#include "core/error.h"
#include "engine/gguf_info.h"
#include "engine/quantizer.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

using namespace specd;
using namespace specd::engine;
using specd::fixtures::fixture;
namespace fs = std::filesystem;

namespace {

class QuantizerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::random_device rd;
        dir_ = fs::temp_directory_path() / ("specd-quantize-" + std::to_string(rd()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

} // namespace

TEST(QuantizeType, NamesAreCaseInsensitiveAndUnknownOnesRefused) {
    const struct {
        const char * name;
        const char * canonical;
        int          ftype;
    } known[] = {
        {"q4_K_M", "Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q8_0", "Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
        {"q4_0", "Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},       {"q5_k_m", "Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
        {"f16", "F16", LLAMA_FTYPE_MOSTLY_F16},
    };
    for (const auto & k : known) {
        const auto t = parse_quantize_type(k.name);
        ASSERT_TRUE(t) << k.name;
        EXPECT_EQ(t->name, k.canonical);
        EXPECT_EQ(t->ftype, k.ftype);
    }
    for (const char * bad : {"", "q9_0", "Q4_K_MM", "f32 ", "iq2_xxs"}) EXPECT_FALSE(parse_quantize_type(bad)) << bad;
    EXPECT_NE(supported_quantize_types().find("Q4_K_M"), std::string::npos);
}

TEST_F(QuantizerTest, QuantizedModelLoadsSmallerAndCannotBeQuantizedAgain) {
    std::vector<std::string> lines;
    const fs::path q8 = dir_ / "q8.gguf";
    const auto start = std::chrono::steady_clock::now();
    quantize_model(fixture("tiny.gguf"), q8, *parse_quantize_type("q8_0"), [&](const std::string & s) { lines.push_back(s); });
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(lines, (std::vector<std::string>{"quantizing F32 model to Q8_0"}));
    const uint64_t before = fs::file_size(fixture("tiny.gguf"));
    const uint64_t after  = fs::file_size(q8);
    // Q8_0 stores 34 bytes per 32 weights instead of 128: about a quarter.
    EXPECT_LT(after, before / 3) << before << " -> " << after;
    std::printf("tiny.gguf F32 %llu bytes -> Q8_0 %llu bytes in %lld ms\n", (unsigned long long) before,
                (unsigned long long) after, (long long) ms);
    EXPECT_EQ(read_gguf_info(q8).file_type, "Q8_0");
    const auto model = Model::load(q8, {});
    EXPECT_EQ(model->tokenize("hello world", false, false), fixtures::shared_model("tiny.gguf")->tokenize("hello world", false, false));

    const fs::path again = dir_ / "again.gguf";
    try {
        quantize_model(q8, again, *parse_quantize_type("q4_0"), {});
        FAIL() << "a quantized source was quantized again";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        EXPECT_NE(std::string(e.what()).find("already quantized"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(again));
}

TEST_F(QuantizerTest, KQuantsFallBackForTheTinyShapes) {
    // 64-wide rows are not a multiple of K-quants' 256-weight blocks: llama.cpp falls back
    // per tensor, and the file still loads and answers.
    const fs::path out = dir_ / "q4km.gguf";
    quantize_model(fixture("tiny.gguf"), out, *parse_quantize_type("Q4_K_M"), {});
    // The 32064 x 64 embedding and output matrices dominate; they fall back to Q5_0 / Q6_K.
    EXPECT_LT(fs::file_size(out), fs::file_size(fixture("tiny.gguf")) / 3);
    EXPECT_NE(Model::load(out, {})->get(), nullptr);
}
