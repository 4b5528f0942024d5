#include "engine/file_type_name.h"

#include "llama.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace specd::engine {

namespace {

// llama.h's llama_ftype without its prefix; gaps (removed types) are left out.
constexpr std::array<std::pair<llama_ftype, const char *>, 36> k_names{{
    {LLAMA_FTYPE_ALL_F32, "F32"},           {LLAMA_FTYPE_MOSTLY_F16, "F16"},
    {LLAMA_FTYPE_MOSTLY_Q4_0, "Q4_0"},      {LLAMA_FTYPE_MOSTLY_Q4_1, "Q4_1"},
    {LLAMA_FTYPE_MOSTLY_Q8_0, "Q8_0"},      {LLAMA_FTYPE_MOSTLY_Q5_0, "Q5_0"},
    {LLAMA_FTYPE_MOSTLY_Q5_1, "Q5_1"},      {LLAMA_FTYPE_MOSTLY_Q2_K, "Q2_K"},
    {LLAMA_FTYPE_MOSTLY_Q3_K_S, "Q3_K_S"},  {LLAMA_FTYPE_MOSTLY_Q3_K_M, "Q3_K_M"},
    {LLAMA_FTYPE_MOSTLY_Q3_K_L, "Q3_K_L"},  {LLAMA_FTYPE_MOSTLY_Q4_K_S, "Q4_K_S"},
    {LLAMA_FTYPE_MOSTLY_Q4_K_M, "Q4_K_M"},  {LLAMA_FTYPE_MOSTLY_Q5_K_S, "Q5_K_S"},
    {LLAMA_FTYPE_MOSTLY_Q5_K_M, "Q5_K_M"},  {LLAMA_FTYPE_MOSTLY_Q6_K, "Q6_K"},
    {LLAMA_FTYPE_MOSTLY_IQ2_XXS, "IQ2_XXS"}, {LLAMA_FTYPE_MOSTLY_IQ2_XS, "IQ2_XS"},
    {LLAMA_FTYPE_MOSTLY_Q2_K_S, "Q2_K_S"},  {LLAMA_FTYPE_MOSTLY_IQ3_XS, "IQ3_XS"},
    {LLAMA_FTYPE_MOSTLY_IQ3_XXS, "IQ3_XXS"}, {LLAMA_FTYPE_MOSTLY_IQ1_S, "IQ1_S"},
    {LLAMA_FTYPE_MOSTLY_IQ4_NL, "IQ4_NL"},  {LLAMA_FTYPE_MOSTLY_IQ3_S, "IQ3_S"},
    {LLAMA_FTYPE_MOSTLY_IQ3_M, "IQ3_M"},    {LLAMA_FTYPE_MOSTLY_IQ2_S, "IQ2_S"},
    {LLAMA_FTYPE_MOSTLY_IQ2_M, "IQ2_M"},    {LLAMA_FTYPE_MOSTLY_IQ4_XS, "IQ4_XS"},
    {LLAMA_FTYPE_MOSTLY_IQ1_M, "IQ1_M"},    {LLAMA_FTYPE_MOSTLY_BF16, "BF16"},
    {LLAMA_FTYPE_MOSTLY_TQ1_0, "TQ1_0"},    {LLAMA_FTYPE_MOSTLY_TQ2_0, "TQ2_0"},
    // Ollama's name for gpt-oss's type (its MoE experts in MXFP4, the rest wider).
    {LLAMA_FTYPE_MOSTLY_MXFP4_MOE, "MXFP4"}, {LLAMA_FTYPE_MOSTLY_NVFP4, "NVFP4"},
    {LLAMA_FTYPE_MOSTLY_Q1_0, "Q1_0"},      {LLAMA_FTYPE_MOSTLY_Q2_0, "Q2_0"},
}};

} // namespace

std::string file_type_name(int64_t file_type) {
    for (const auto & [type, name] : k_names) {
        if (int64_t(type) == file_type) return name;
    }
    return "unknown";
}

std::string tensor_type_name(const char * ggml_type_name) {
    if (!ggml_type_name) return "unknown";
    std::string out = ggml_type_name;
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    return out;
}

} // namespace specd::engine
