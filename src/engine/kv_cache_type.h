#pragma once
// The KV cache's element type and flash attention, for every model a server loads: Ollama's
// OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0) and OLLAMA_FLASH_ATTENTION, read as SPECD_ settings
// with the OLLAMA_ names as fallback (core/settings). A quantized cache holds about half (q8_0)
// or a quarter (q4_0) of f16's bytes per token; llama.cpp needs flash attention to quantize
// the V cache, so a quantized type with flash attention turned off is refused.
#include "engine/gguf_info.h"
#include "engine/llama_handles.h"

#include <optional>
#include <string>

namespace specd::engine {

struct KvCacheType {
    ggml_type             type  = GGML_TYPE_F16;
    llama_flash_attn_type flash = LLAMA_FLASH_ATTN_TYPE_AUTO; // auto: where the device supports it

    // The cache's bytes per element relative to f16 (q8_0: 34 bytes per 32 values).
    double bytes_vs_f16() const;
    const char * name() const;
};

// `type`: f16, q8_0 or q4_0 (unset: f16). `flash`: 1/true/0/false, as Go's ParseBool spells
// them (unset: auto). Throws
// std::invalid_argument naming the setting for anything else, or for a quantized type with
// flash attention off.
KvCacheType parse_kv_cache_type(const std::optional<std::string> & type, const std::optional<std::string> & flash);

// The process's, from SPECD_KV_CACHE_TYPE and SPECD_FLASH_ATTENTION (checked by `specd serve`
// before anything loads; runner processes inherit them).
const KvCacheType & configured_kv_cache_type();

// What a model's cache gets of `wanted`: a quantized cache needs key and value heads that are
// multiples of 64 (k_quantized_head_multiple), else the model keeps f16, as Ollama falls back;
// the caller says so in its log and /api/ps shows the type per model. Real models' heads (64,
// 128, 256) all qualify; tiny test models' do not.
KvCacheType kv_cache_type_for(const GgufInfo & info, const KvCacheType & wanted);

// Blocks hold 32 values; and the pinned llama.cpp rotates a quantized cache's heads by a
// Hadamard matrix only for multiples of 64, while its context shift always applies that
// rotation: on heads of 32 the shift dereferences a missing matrix and the process crashes
// (llama_kv_cache::build_rope_shift, measured on a 32-value-head fixture).
inline constexpr int64_t k_quantized_head_multiple = 64;

// Sets the context parameters' cache types and flash attention.
void apply_kv_cache_type(const KvCacheType & kv, llama_context_params & cp);

} // namespace specd::engine
