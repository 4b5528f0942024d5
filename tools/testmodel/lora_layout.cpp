#include "lora_layout.h"

#include <gguf.h>

#include <cmath>
#include <string>

std::vector<tensor_spec> lora_tensor_specs(const lora_spec & spec) {
    const llama_hparams_spec & hp = spec.base;
    const int64_t n_embd    = hp.n_embd;
    const int64_t n_ff      = hp.n_ff;
    const int64_t n_embd_kv = int64_t(hp.n_embd_head()) * hp.n_head_kv;
    const int64_t r         = spec.rank;

    // Unit-scale A x (std 1/sqrt(n_in) per weight) and B of std 1/sqrt(r): with
    // alpha = rank the update has the same scale as the base matrix's own output, enough to
    // move greedy choices of a random model.
    const auto pair = [&](std::vector<tensor_spec> & out, const std::string & name, int64_t n_in, int64_t n_out) {
        out.push_back({name + ".lora_a", {n_in, r}, WEIGHT_INIT_UNIFORM, std::sqrt(3.0 / double(n_in)), {}});
        out.push_back({name + ".lora_b", {r, n_out}, WEIGHT_INIT_UNIFORM, std::sqrt(3.0 / double(r)), {}});
    };
    std::vector<tensor_spec> specs;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk = "blk." + std::to_string(il) + ".";
        pair(specs, blk + "attn_q.weight", n_embd, n_embd);
        pair(specs, blk + "attn_k.weight", n_embd, n_embd_kv);
        pair(specs, blk + "attn_v.weight", n_embd, n_embd_kv);
        pair(specs, blk + "attn_output.weight", n_embd, n_embd);
        pair(specs, blk + "ffn_gate.weight", n_embd, n_ff);
        pair(specs, blk + "ffn_up.weight", n_embd, n_ff);
        pair(specs, blk + "ffn_down.weight", n_ff, n_embd);
    }
    return specs;
}

void lora_set_keys(gguf_context * ctx, const lora_spec & spec) {
    gguf_set_val_str(ctx, "general.architecture", "llama");
    gguf_set_val_str(ctx, "general.type", "adapter");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel-lora");
    gguf_set_val_str(ctx, "adapter.type", "lora");
    gguf_set_val_f32(ctx, "adapter.lora.alpha", spec.alpha);
}
