#pragma once
// Quantizing a GGUF model with llama.cpp's quantizer (llama_model_quantize), for /api/create's
// `quantize`. Like Ollama, only unquantized sources (F32, F16, BF16) are accepted: quantizing
// an already quantized model compounds the error.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace specd::engine {

struct QuantizeType {
    std::string name;  // canonical spelling, e.g. "Q4_K_M"
    int         ftype; // llama_ftype
};

// The type a client names, case-insensitively ("q4_k_m", "Q8_0", "f16"); nullopt when
// unknown. supported_quantize_types() lists them for the error message.
std::optional<QuantizeType> parse_quantize_type(const std::string & name);
std::string                 supported_quantize_types();

// Quantizes `in` to `out` (overwritten). Throws specd::Error(bad_request) before writing
// anything when `in` is not an F32/F16/BF16 model, and internal when llama.cpp fails.
// `progress` receives Ollama-style status lines ("quantizing F16 model to Q4_K_M").
// Tensors quantized so far, of how many (llama.cpp's per-tensor log lines, as they come).
using TensorProgress = std::function<void(uint64_t done, uint64_t total)>;
void quantize_model(const std::filesystem::path & in, const std::filesystem::path & out, const QuantizeType & type,
                    const std::function<void(const std::string &)> & progress, const TensorProgress & tensors = {});

} // namespace specd::engine
