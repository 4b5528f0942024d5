#include "engine/kv_cache_type.h"

#include <gtest/gtest.h>

#include <stdexcept>

using specd::engine::GgufInfo;
using specd::engine::kv_cache_type_for;
using specd::engine::parse_kv_cache_type;

TEST(KvCacheType, ReadsOllamasTypesAndFlashAttention) {
    const auto def = parse_kv_cache_type(std::nullopt, std::nullopt);
    EXPECT_EQ(def.type, GGML_TYPE_F16);
    EXPECT_EQ(def.flash, LLAMA_FLASH_ATTN_TYPE_AUTO);
    EXPECT_DOUBLE_EQ(def.bytes_vs_f16(), 1.0);

    const auto q8 = parse_kv_cache_type("q8_0", std::nullopt);
    EXPECT_EQ(q8.type, GGML_TYPE_Q8_0);
    EXPECT_DOUBLE_EQ(q8.bytes_vs_f16(), 34.0 / 64.0);
    const auto q4 = parse_kv_cache_type("q4_0", "1");
    EXPECT_EQ(q4.type, GGML_TYPE_Q4_0);
    EXPECT_EQ(q4.flash, LLAMA_FLASH_ATTN_TYPE_ENABLED);
    EXPECT_DOUBLE_EQ(q4.bytes_vs_f16(), 18.0 / 64.0);
    EXPECT_EQ(parse_kv_cache_type("f16", "false").flash, LLAMA_FLASH_ATTN_TYPE_DISABLED);
    EXPECT_EQ(parse_kv_cache_type("f16", "true").flash, LLAMA_FLASH_ATTN_TYPE_ENABLED);
    for (const char * on : {"t", "T", "TRUE", "True"}) EXPECT_EQ(parse_kv_cache_type(std::nullopt, std::string(on)).flash, LLAMA_FLASH_ATTN_TYPE_ENABLED);
    for (const char * off : {"f", "F", "FALSE", "False"}) EXPECT_EQ(parse_kv_cache_type(std::nullopt, std::string(off)).flash, LLAMA_FLASH_ATTN_TYPE_DISABLED);
    EXPECT_STREQ(q8.name(), "q8_0");
}

TEST(KvCacheType, RefusesWhatLlamaCppCannotDo) {
    for (const char * bad : {"", "F16", "q5_1", "fp16", "bf16", "q8"}) {
        EXPECT_THROW(parse_kv_cache_type(std::string(bad), std::nullopt), std::invalid_argument) << bad;
    }
    for (const char * bad : {"", "yes", "2", "on", "tRuE"}) {
        EXPECT_THROW(parse_kv_cache_type(std::nullopt, std::string(bad)), std::invalid_argument) << bad;
    }
    // A quantized V cache needs flash attention.
    EXPECT_THROW(parse_kv_cache_type("q8_0", "0"), std::invalid_argument);
    EXPECT_THROW(parse_kv_cache_type("q4_0", "false"), std::invalid_argument);
}

namespace {

GgufInfo heads(int64_t n_embd, int64_t n_head, std::optional<int64_t> key_length = std::nullopt,
               std::optional<int64_t> value_length_swa = std::nullopt) {
    GgufInfo info;
    info.architecture = "llama";
    info.metadata.push_back({"llama.embedding_length", n_embd});
    info.metadata.push_back({"llama.attention.head_count", n_head});
    if (key_length) info.metadata.push_back({"llama.attention.key_length", *key_length});
    if (value_length_swa) info.metadata.push_back({"llama.attention.value_length_swa", *value_length_swa});
    return info;
}

} // namespace

// Quantized caches need heads of a multiple of 64 values: others keep f16.
TEST(KvCacheType, AModelWhoseHeadsAreNotMultiplesOf64KeepsF16) {
    const auto q8 = parse_kv_cache_type("q8_0", "1");
    EXPECT_EQ(kv_cache_type_for(heads(4096, 32), q8).type, GGML_TYPE_Q8_0);       // heads of 128
    EXPECT_EQ(kv_cache_type_for(heads(64, 1), q8).type, GGML_TYPE_Q8_0);          // heads of 64
    EXPECT_EQ(kv_cache_type_for(heads(64, 2), q8).type, GGML_TYPE_F16);           // heads of 32: shift crashes
    EXPECT_EQ(kv_cache_type_for(heads(64, 4), q8).type, GGML_TYPE_F16);           // heads of 16
    EXPECT_EQ(kv_cache_type_for(heads(64, 4), q8).flash, LLAMA_FLASH_ATTN_TYPE_ENABLED);
    EXPECT_EQ(kv_cache_type_for(heads(64, 4, 64), q8).type, GGML_TYPE_F16);       // values still 16
    EXPECT_EQ(kv_cache_type_for(heads(4096, 32, 128, 48), q8).type, GGML_TYPE_F16); // SWA values of 48
    EXPECT_EQ(kv_cache_type_for(heads(64, 4), parse_kv_cache_type(std::nullopt, std::nullopt)).type, GGML_TYPE_F16);
}
