#include "gemma4_layout.h"

#include <gguf.h>

#include <cmath>
#include <memory>

std::string gemma4_hparams_check(const gemma4_hparams_spec & hp) {
    if (hp.n_embd == 0 || hp.n_layer == 0 || hp.n_head == 0 || hp.n_head_kv == 0 || hp.n_ff == 0 ||
        hp.head_dim == 0 || hp.head_dim_swa == 0 || hp.n_swa == 0 || hp.n_ctx_train == 0) {
        return "all sizes must be positive";
    }
    // libllama's ISWA cache wants both kinds of layer, and its KV-reuse check at least two
    // layers that own a cache.
    if (hp.n_layer < 3) {
        return "a gemma4 model needs at least 3 layers (sliding-window and full attention)";
    }
    if (hp.n_head % hp.n_head_kv != 0) {
        return "--n-head must be a multiple of --n-head-kv";
    }
    if (hp.head_dim % 2 != 0 || hp.head_dim_swa % 2 != 0) {
        return "head sizes must be even for RoPE";
    }
    if (hp.output_dims > hp.n_embd) {
        return "--output-dims must be at most --n-embd";
    }
    return {};
}

double gemma4_output_bound(const gemma4_hparams_spec & hp) {
    return uniform_bound(4.0 / std::sqrt(double(hp.read_dims())));
}

std::vector<tensor_spec> gemma4_tensor_specs(const gemma4_hparams_spec & hp, uint32_t n_vocab) {
    const int64_t n_embd = hp.n_embd;
    const int64_t n_ff   = hp.n_ff;

    // Uniform bounds are std * sqrt(3). The graph scales token embeddings by sqrt(n_embd), so
    // they are stored at std 1/sqrt(n_embd): the input has unit scale, as the layers' outputs
    // do (every block ends in an RMS norm), and the context matters for the next token.
    // Logits = output . rms_norm(x): std 4 keeps greedy top-two ties rare (see llama_layout);
    // the soft cap at 30 leaves them nearly linear.
    const double b_embd = uniform_bound(1.0 / std::sqrt(double(n_embd)));
    const double b_in   = uniform_bound(1.0 / std::sqrt(double(n_embd)));
    const double b_down = uniform_bound(1.0 / std::sqrt(double(n_ff)));
    const double b_out  = gemma4_output_bound(hp);

    std::vector<tensor_spec> specs;
    specs.push_back(matrix_spec("token_embd.weight", n_embd, n_vocab, b_embd));
    specs.push_back(ones_spec("output_norm.weight", n_embd));
    specs.push_back(matrix_spec("output.weight", n_embd, n_vocab, b_out));
    specs.back().row_prefix = hp.output_dims;
    // One table for every full-attention layer (the real ones hold 1 for rotated dimensions).
    specs.push_back(ones_spec("rope_freqs.weight", hp.head_dim / 2));

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk  = "blk." + std::to_string(il) + ".";
        const int64_t     d    = hp.is_full(il) ? hp.head_dim : hp.head_dim_swa;
        const int64_t     n_q  = d * hp.n_head;
        const int64_t     n_kv = d * hp.n_head_kv;
        specs.push_back(ones_spec(blk + "attn_norm.weight", n_embd));
        specs.push_back(matrix_spec(blk + "attn_q.weight", n_embd, n_q, b_in));
        specs.push_back(matrix_spec(blk + "attn_k.weight", n_embd, n_kv, b_in));
        specs.push_back(matrix_spec(blk + "attn_v.weight", n_embd, n_kv, b_in));
        specs.push_back(matrix_spec(blk + "attn_output.weight", n_q, n_embd, uniform_bound(1.0 / std::sqrt(double(n_q)))));
        specs.push_back(ones_spec(blk + "attn_q_norm.weight", d));
        specs.push_back(ones_spec(blk + "attn_k_norm.weight", d));
        // The block's output is RMS-normed before the residual add, so its norm weight is
        // its scale.
        const auto post = [&](std::string name) {
            return il >= hp.scaled_from_layer ? const_spec(std::move(name), n_embd, hp.residual_scale)
                                              : ones_spec(std::move(name), n_embd);
        };
        specs.push_back(post(blk + "post_attention_norm.weight"));
        specs.push_back(ones_spec(blk + "ffn_norm.weight", n_embd));
        specs.push_back(matrix_spec(blk + "ffn_gate.weight", n_embd, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_up.weight", n_embd, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_down.weight", n_ff, n_embd, b_down));
        specs.push_back(post(blk + "post_ffw_norm.weight"));
    }
    return specs;
}

void gemma4_set_hparams(gguf_context * ctx, const gemma4_hparams_spec & hp, uint32_t n_vocab) {
    gguf_set_val_str(ctx, "general.architecture", "gemma4");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel gemma4");
    gguf_set_val_u32(ctx, "general.file_type", 0); // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(ctx, "gemma4.vocab_size", n_vocab);
    gguf_set_val_u32(ctx, "gemma4.context_length", hp.n_ctx_train);
    gguf_set_val_u32(ctx, "gemma4.embedding_length", hp.n_embd);
    gguf_set_val_u32(ctx, "gemma4.block_count", hp.n_layer);
    gguf_set_val_u32(ctx, "gemma4.feed_forward_length", hp.n_ff);
    gguf_set_val_u32(ctx, "gemma4.attention.head_count", hp.n_head);
    gguf_set_val_u32(ctx, "gemma4.attention.head_count_kv", hp.n_head_kv);
    gguf_set_val_u32(ctx, "gemma4.attention.key_length", hp.head_dim);
    gguf_set_val_u32(ctx, "gemma4.attention.value_length", hp.head_dim);
    gguf_set_val_u32(ctx, "gemma4.attention.key_length_swa", hp.head_dim_swa);
    gguf_set_val_u32(ctx, "gemma4.attention.value_length_swa", hp.head_dim_swa);
    // Written explicitly: the sliding layers' default is the full layers' count.
    gguf_set_val_u32(ctx, "gemma4.rope.dimension_count", hp.head_dim);
    gguf_set_val_u32(ctx, "gemma4.rope.dimension_count_swa", hp.head_dim_swa);
    gguf_set_val_f32(ctx, "gemma4.rope.freq_base", hp.rope_base);
    gguf_set_val_f32(ctx, "gemma4.rope.freq_base_swa", hp.rope_base_swa);
    gguf_set_val_u32(ctx, "gemma4.attention.sliding_window", hp.n_swa);
    // One flag per layer, true for a sliding-window layer (a single value would be copied to
    // every layer, not repeated as a period).
    std::unique_ptr<bool[]> sliding(new bool[hp.n_layer]);
    for (uint32_t il = 0; il < hp.n_layer; ++il) sliding[il] = !hp.is_full(il);
    gguf_set_arr_data(ctx, "gemma4.attention.sliding_window_pattern", GGUF_TYPE_BOOL, sliding.get(), hp.n_layer);
    gguf_set_val_f32(ctx, "gemma4.attention.layer_norm_rms_epsilon", hp.rms_eps);
    gguf_set_val_u32(ctx, "gemma4.embedding_length_per_layer_input", 0); // no per-layer embeddings
    gguf_set_val_f32(ctx, "gemma4.final_logit_softcapping", hp.logit_softcap);
}
