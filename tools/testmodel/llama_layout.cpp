#include "llama_layout.h"

#include <gguf.h>

#include <cmath>

std::string llama_hparams_check(const llama_hparams_spec & hp) {
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_head_kv == 0 || hp.n_ff == 0 ||
        hp.n_ctx_train == 0) {
        return "all sizes must be positive";
    }
    if (hp.n_embd % hp.n_head != 0) {
        return "--n-embd must be a multiple of --n-head";
    }
    if (hp.n_head % hp.n_head_kv != 0) {
        return "--n-head must be a multiple of --n-head-kv";
    }
    if (hp.n_embd_head() % 2 != 0) {
        return "the head size (n_embd / n_head) must be even for RoPE";
    }
    if (hp.arch == "qwen2vl" && hp.n_embd_head() < 8) {
        return "qwen2vl: the head size (n_embd / n_head) must be at least 8 for its M-RoPE sections";
    }
    return {};
}

std::vector<tensor_spec> llama_tensor_specs(const llama_hparams_spec & hp, uint32_t n_vocab) {
    const int64_t n_embd    = hp.n_embd;
    const int64_t n_ff      = hp.n_ff;
    const int64_t n_embd_kv = int64_t(hp.n_embd_head()) * hp.n_head_kv;

    // Uniform bounds are std * sqrt(3). Matrices get std 1/sqrt(fan_in) so every layer's
    // output has unit scale next to the unit-scale embeddings: the layers (and so the
    // context) matter for the next token, and a pair's scaled layers can outweigh the rest.
    // Q and K get twice that so attention is peaked rather than a flat average.
    const double b_embd = uniform_bound(1.0);
    const double b_in   = uniform_bound(1.0 / std::sqrt(double(n_embd)));
    const double b_qk   = 2.0 * b_in;
    const double b_down = uniform_bound(1.0 / std::sqrt(double(n_ff)));
    // Logits = output . rms_norm(x): std 4 spreads them enough that greedy top-two ties
    // (gap < 1e-3) are rare, which the speculation-equivalence tests depend on.
    const double b_out  = uniform_bound(4.0 / std::sqrt(double(n_embd)));

    std::vector<tensor_spec> specs;
    specs.push_back(matrix_spec("token_embd.weight", n_embd, n_vocab, b_embd));
    specs.push_back(ones_spec("output_norm.weight", n_embd));
    specs.push_back(matrix_spec("output.weight", n_embd, n_vocab, b_out));
    specs.back().row_prefix = hp.output_dims;

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk   = "blk." + std::to_string(il) + ".";
        const double      scale = il >= hp.scaled_from_layer ? hp.residual_scale : 1.0;
        specs.push_back(ones_spec(blk + "attn_norm.weight", n_embd));
        specs.push_back(matrix_spec(blk + "attn_q.weight", n_embd, n_embd, b_qk));
        specs.push_back(matrix_spec(blk + "attn_k.weight", n_embd, n_embd_kv, b_qk));
        specs.push_back(matrix_spec(blk + "attn_v.weight", n_embd, n_embd_kv, b_in));
        specs.push_back(matrix_spec(blk + "attn_output.weight", n_embd, n_embd, scale * b_in));
        specs.push_back(ones_spec(blk + "ffn_norm.weight", n_embd));
        specs.push_back(matrix_spec(blk + "ffn_gate.weight", n_embd, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_up.weight", n_embd, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_down.weight", n_ff, n_embd, scale * b_down));
    }
    return specs;
}

void llama_set_hparams(gguf_context * ctx, const llama_hparams_spec & hp, uint32_t n_vocab) {
    const std::string a   = hp.arch;
    const auto        key = [&](const char * name) { return a + "." + name; };
    gguf_set_val_str(ctx, "general.architecture", a.c_str());
    gguf_set_val_str(ctx, "general.name", "specd-testmodel");
    gguf_set_val_u32(ctx, "general.file_type", 0); // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(ctx, key("vocab_size").c_str(), n_vocab);
    gguf_set_val_u32(ctx, key("context_length").c_str(), hp.n_ctx_train);
    gguf_set_val_u32(ctx, key("embedding_length").c_str(), hp.n_embd);
    gguf_set_val_u32(ctx, key("block_count").c_str(), hp.n_layer);
    gguf_set_val_u32(ctx, key("feed_forward_length").c_str(), hp.n_ff);
    gguf_set_val_u32(ctx, key("attention.head_count").c_str(), hp.n_head);
    gguf_set_val_u32(ctx, key("attention.head_count_kv").c_str(), hp.n_head_kv);
    gguf_set_val_u32(ctx, key("rope.dimension_count").c_str(), hp.n_embd_head());
    gguf_set_val_f32(ctx, key("rope.freq_base").c_str(), hp.rope_freq_base);
    gguf_set_val_f32(ctx, key("attention.layer_norm_rms_epsilon").c_str(), hp.rms_eps);
    if (a == "qwen2vl") {
        const int32_t half = int32_t(hp.n_embd_head() / 2);
        const int32_t hw   = half * 3 / 8;
        const int32_t sections[4] = {half - 2 * hw, hw, hw, 0};
        gguf_set_arr_data(ctx, key("rope.dimension_sections").c_str(), GGUF_TYPE_INT32, sections, 4);
    }
}
