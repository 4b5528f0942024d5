#include "engine/adapter_check.h"

#include "engine/llama_handles.h"

#include <map>
#include <string_view>

namespace specd::engine {

namespace {

std::string str_key(const gguf_context * g, const char * key) {
    const int64_t id = gguf_find_key(g, key);
    return id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_STRING ? gguf_get_val_str(g, id) : "";
}

} // namespace

std::string lora_adapter_mismatch(const std::filesystem::path & model_gguf, const std::filesystem::path & adapter_gguf) {
    const std::string shown = adapter_gguf.filename().string();
    // Tensor shapes need a ggml context of metadata-only tensors (no_alloc).
    ggml_context * model_meta   = nullptr;
    ggml_context * adapter_meta = nullptr;
    gguf_ptr model(gguf_init_from_file(model_gguf.c_str(), {/*no_alloc=*/true, &model_meta}));
    ggml_context_ptr model_tensors(model_meta);
    gguf_ptr adapter(gguf_init_from_file(adapter_gguf.c_str(), {/*no_alloc=*/true, &adapter_meta}));
    ggml_context_ptr adapter_tensors(adapter_meta);
    if (!model) return "the model's GGUF header cannot be read";
    if (!adapter) return shown + " is not a readable GGUF file";

    if (const std::string type = str_key(adapter.get(), "general.type"); type != "adapter") {
        return shown + " is not an adapter (general.type is '" + type + "', expected 'adapter')";
    }
    if (const std::string type = str_key(adapter.get(), "adapter.type"); type != "lora") {
        return shown + " is not a LoRA adapter (adapter.type is '" + type + "')";
    }
    const std::string model_arch   = str_key(model.get(), "general.architecture");
    const std::string adapter_arch = str_key(adapter.get(), "general.architecture");
    if (model_arch != adapter_arch) {
        return shown + " is for architecture '" + adapter_arch + "', the model is '" + model_arch + "'";
    }

    struct Pair {
        const ggml_tensor * a = nullptr;
        const ggml_tensor * b = nullptr;
    };
    std::map<std::string, Pair> pairs; // by base tensor name
    for (ggml_tensor * t = ggml_get_first_tensor(adapter_meta); t != nullptr; t = ggml_get_next_tensor(adapter_meta, t)) {
        const std::string_view name = ggml_get_name(t);
        if (name.ends_with(".lora_a")) {
            pairs[std::string(name.substr(0, name.size() - 7))].a = t;
        } else if (name.ends_with(".lora_b")) {
            pairs[std::string(name.substr(0, name.size() - 7))].b = t;
        } else if (!name.ends_with("_norm.weight")) { // llama.cpp skips norm vectors
            return shown + ": tensor '" + std::string(name) + "' is neither a lora_a nor a lora_b";
        }
    }
    if (pairs.empty()) return shown + " has no LoRA tensors";
    for (const auto & [name, pair] : pairs) {
        if (pair.a == nullptr || pair.b == nullptr) return shown + ": '" + name + "' lacks its lora_a or lora_b";
        const ggml_tensor * base = ggml_get_tensor(model_meta, name.c_str());
        if (base == nullptr) return shown + ": the model has no tensor '" + name + "' (made for another model?)";
        // W is (n_in, n_out) in ggml order; A is (n_in, r), B is (r, n_out). Token
        // embeddings are looked up, not multiplied, and store A and B the other way round.
        const bool ok = name.ends_with("token_embd.weight")
                            ? base->ne[0] == pair.b->ne[1] && base->ne[1] == pair.a->ne[1]
                            : base->ne[0] == pair.a->ne[0] && base->ne[1] == pair.b->ne[1] && pair.a->ne[1] == pair.b->ne[0];
        if (!ok) {
            return shown + ": the shapes of '" + name + "' do not match the model's (made for another model?)";
        }
    }
    return {};
}

} // namespace specd::engine
