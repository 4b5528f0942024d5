#include "engine/model_traits.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/llama_handles.h"

#include <string>

namespace specd::engine {

namespace {

// <arch>.pooling_type set to anything but NONE, or <arch>.attention.causal = false.
bool declares_embedding(const gguf_context * g) {
    const int64_t arch_id = gguf_find_key(g, "general.architecture");
    if (arch_id < 0 || gguf_get_kv_type(g, arch_id) != GGUF_TYPE_STRING) return false;
    const std::string arch = gguf_get_val_str(g, arch_id);
    const int64_t pooling = gguf_find_key(g, (arch + ".pooling_type").c_str());
    if (pooling >= 0) {
        const auto type = gguf_get_kv_type(g, pooling);
        const int64_t value = type == GGUF_TYPE_UINT32 ? int64_t(gguf_get_val_u32(g, pooling))
                            : type == GGUF_TYPE_INT32  ? int64_t(gguf_get_val_i32(g, pooling))
                                                       : -1;
        if (value != LLAMA_POOLING_TYPE_NONE) return true;
    }
    const int64_t causal = gguf_find_key(g, (arch + ".attention.causal").c_str());
    return causal >= 0 && gguf_get_kv_type(g, causal) == GGUF_TYPE_BOOL && !gguf_get_val_bool(g, causal);
}

} // namespace

ModelTraits read_model_traits(const std::filesystem::path & gguf) {
    const std::string shown = gguf.filename().string();
    ModelTraits traits;
    {
        gguf_ptr g(gguf_init_from_file(gguf.c_str(), {/*no_alloc=*/true, /*ctx=*/nullptr}));
        if (!g) throw bad_request("not a readable GGUF file: " + shown);
        traits.embedding = declares_embedding(g.get());
    }
    ensure_backend();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only         = true;
    mp.n_gpu_layers       = 0;
    LogCapture capture; // a vocabulary llama.cpp cannot read is no FIM, not log noise
    model_ptr model(llama_model_load_from_file(gguf.c_str(), mp));
    if (model) {
        const llama_vocab * vocab = llama_model_get_vocab(model.get());
        traits.fill_in_middle = llama_vocab_fim_pre(vocab) != LLAMA_TOKEN_NULL && llama_vocab_fim_suf(vocab) != LLAMA_TOKEN_NULL;
    }
    return traits;
}

} // namespace specd::engine
