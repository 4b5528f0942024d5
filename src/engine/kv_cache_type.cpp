#include "engine/kv_cache_type.h"

#include "core/settings.h"

#include <stdexcept>

namespace specd::engine {

double KvCacheType::bytes_vs_f16() const {
    // ggml's block sizes: 32 values in 34 bytes (q8_0) or 18 bytes (q4_0), against 64 at f16.
    switch (type) {
        case GGML_TYPE_Q8_0: return 34.0 / 64.0;
        case GGML_TYPE_Q4_0: return 18.0 / 64.0;
        default:             return 1.0;
    }
}

const char * KvCacheType::name() const { return ggml_type_name(type); }

KvCacheType parse_kv_cache_type(const std::optional<std::string> & type, const std::optional<std::string> & flash) {
    KvCacheType kv;
    if (flash) {
        // The spellings Ollama's settings take (Go's strconv.ParseBool).
        const std::string & f = *flash;
        if (f == "1" || f == "t" || f == "T" || f == "true" || f == "TRUE" || f == "True") {
            kv.flash = LLAMA_FLASH_ATTN_TYPE_ENABLED;
        } else if (f == "0" || f == "f" || f == "F" || f == "false" || f == "FALSE" || f == "False") {
            kv.flash = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        } else {
            throw std::invalid_argument("FLASH_ATTENTION must be 1, true, 0 or false, not \"" + f + "\"");
        }
    }
    if (type) {
        if (*type == "f16") kv.type = GGML_TYPE_F16;
        else if (*type == "q8_0") kv.type = GGML_TYPE_Q8_0;
        else if (*type == "q4_0") kv.type = GGML_TYPE_Q4_0;
        else throw std::invalid_argument("KV_CACHE_TYPE must be f16, q8_0 or q4_0, not \"" + *type + "\"");
    }
    if (kv.type != GGML_TYPE_F16 && kv.flash == LLAMA_FLASH_ATTN_TYPE_DISABLED) {
        throw std::invalid_argument(std::string("KV_CACHE_TYPE ") + kv.name() +
                                    " needs flash attention (llama.cpp quantizes the V cache only with it): "
                                    "leave FLASH_ATTENTION unset or set it to 1");
    }
    return kv;
}

const KvCacheType & configured_kv_cache_type() {
    static const KvCacheType kv = parse_kv_cache_type(setting("KV_CACHE_TYPE"), setting("FLASH_ATTENTION"));
    return kv;
}

KvCacheType kv_cache_type_for(const GgufInfo & info, const KvCacheType & wanted) {
    if (wanted.type == GGML_TYPE_F16) return wanted;
    const std::string a      = info.architecture + ".";
    const int64_t     n_head = std::max<int64_t>(1, gguf_int(info, a + "attention.head_count").value_or(1));
    const int64_t     plain  = gguf_int(info, a + "embedding_length").value_or(0) / n_head;
    const int64_t     block  = k_quantized_head_multiple;
    for (const char * key : {"attention.key_length", "attention.value_length", "attention.key_length_swa",
                             "attention.value_length_swa"}) {
        const auto    given = gguf_int(info, a + key);
        const int64_t size  = given ? *given : std::string(key).ends_with("_swa") ? 0 : plain;
        if (size % block != 0) return {GGML_TYPE_F16, wanted.flash};
    }
    return wanted;
}

void apply_kv_cache_type(const KvCacheType & kv, llama_context_params & cp) {
    cp.type_k          = kv.type;
    cp.type_v          = kv.type;
    cp.flash_attn_type = kv.flash;
}

} // namespace specd::engine
