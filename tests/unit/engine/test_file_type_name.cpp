// Quantization levels by Ollama's names, which clients show and compare ("Q4_K_M", not
// llama.cpp's "Q4_K - Medium").
#include "engine/file_type_name.h"

#include "llama.h"

#include <gtest/gtest.h>

using specd::engine::file_type_name;
using specd::engine::tensor_type_name;

TEST(FileTypeName, UsesOllamasNames) {
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_ALL_F32), "F32");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_F16), "F16");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_BF16), "BF16");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_Q4_0), "Q4_0");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_Q8_0), "Q8_0");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_Q4_K_M), "Q4_K_M");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_Q5_K_S), "Q5_K_S");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_IQ2_XXS), "IQ2_XXS");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_MOSTLY_MXFP4_MOE), "MXFP4");
}

TEST(FileTypeName, UnknownValuesAreNamedSo) {
    EXPECT_EQ(file_type_name(4), "unknown"); // a type llama.cpp removed
    EXPECT_EQ(file_type_name(-1), "unknown");
    EXPECT_EQ(file_type_name(LLAMA_FTYPE_GUESSED), "unknown");
    EXPECT_EQ(file_type_name(100000), "unknown");
}

TEST(FileTypeName, ATensorTypeIsUpperCased) {
    EXPECT_EQ(tensor_type_name("f32"), "F32");
    EXPECT_EQ(tensor_type_name("q8_0"), "Q8_0");
    EXPECT_EQ(tensor_type_name(nullptr), "unknown");
}
