#include "clip_layout.h"

#include <gguf.h>

#include <cmath>

std::string clip_hparams_check(const clip_hparams_spec & hp) {
    if (hp.n_embd_text == 0 || hp.image_size == 0 || hp.patch_size == 0 || hp.n_merge == 0 || hp.n_embd == 0 ||
        hp.n_layer == 0 || hp.n_head == 0 || hp.n_ff == 0) {
        return "all sizes must be positive";
    }
    if (hp.qwen()) {
        // Its 2D RoPE turns each head in four sections; the merge is fixed at 2x2 in mtmd.
        if (hp.n_embd % hp.n_head != 0 || (hp.n_embd / hp.n_head) % 4 != 0) {
            return std::string("--n-embd / --n-head must be a multiple of 4 for ") + hp.type_name();
        }
        if (hp.n_merge != 2) {
            return std::string("--merge must be 2 for ") + hp.type_name();
        }
        return {};
    }
    if (hp.kind == projector_kind::gemma4v) {
        // Its 2D RoPE turns half of each head by x and half by y, NEOX-style.
        if (hp.n_embd % hp.n_head != 0 || (hp.n_embd / hp.n_head) % 4 != 0) {
            return "--n-embd / --n-head must be a multiple of 4 for gemma4v";
        }
        return {};
    }
    if (hp.image_size % hp.patch_size != 0) {
        return "--image-size must be a multiple of --patch-size";
    }
    // The pool drops a remainder that clip.cpp's token count would still include.
    if (hp.n_patches_side() % hp.n_merge != 0) {
        return "--image-size / --patch-size must be a multiple of --merge";
    }
    if (hp.n_embd % hp.n_head != 0) {
        return "--n-embd must be a multiple of --n-head";
    }
    // clip.cpp takes an ffn_down whose rows have n_embd values for a legacy export with up
    // and down swapped, and swaps them back.
    if (hp.n_ff == hp.n_embd) {
        return "--n-ff must differ from --n-embd";
    }
    return {};
}

std::optional<projector_kind> projector_kind_named(std::string_view name) {
    for (const projector_kind kind :
         {projector_kind::gemma3, projector_kind::gemma4v, projector_kind::qwen25vl, projector_kind::qwen2vl}) {
        clip_hparams_spec hp;
        hp.kind = kind;
        if (name == hp.type_name()) return kind;
    }
    return std::nullopt;
}

clip_hparams_spec clip_hparams_default(projector_kind kind) {
    clip_hparams_spec hp;
    hp.kind = kind;
    if (kind == projector_kind::gemma4v) {
        hp.image_size = 224;
        hp.patch_size = 16;
        hp.n_merge    = 3;
    }
    if (hp.qwen()) {
        hp.image_size = 560;
        hp.patch_size = 14;
        hp.n_merge    = 2;
    }
    return hp;
}

namespace {

// As in llama_layout: matrices get std 1/sqrt(fan_in) so activations keep unit scale. The
// projection's input is RMS-normed, so the image embeddings come out at the scale of the text
// model's token embeddings (std 1).

// The q, k, v and output projections of ViT block `blk`, n_embd x n_embd each, with zero
// biases when the type has them.
void push_attention(std::vector<tensor_spec> & specs, const std::string & blk, int64_t n_embd, double bound,
                    bool biases) {
    for (const char * proj : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
        specs.push_back(matrix_spec(blk + proj + ".weight", n_embd, n_embd, bound));
        if (biases) specs.push_back(zeros_spec(blk + proj + ".bias", n_embd));
    }
}

std::vector<tensor_spec> gemma4v_tensor_specs(const clip_hparams_spec & hp) {
    const int64_t n_embd = hp.n_embd;
    const int64_t n_ff   = hp.n_ff;
    const int64_t ps     = hp.patch_size;
    const int64_t d      = n_embd / hp.n_head;
    const double  b_in   = uniform_bound(1.0 / std::sqrt(double(n_embd)));

    std::vector<tensor_spec> specs;
    // The conv2d kernel has no bias in gemma4's export; the x and y position tables are the
    // two planes of one tensor.
    specs.push_back(uniform_spec("v.patch_embd.weight", {ps, ps, 3, n_embd}, uniform_bound(1.0 / std::sqrt(double(3 * ps * ps)))));
    specs.push_back(uniform_spec("v.position_embd.weight", {n_embd, int64_t(hp.n_pos_table), 2}, uniform_bound(0.5)));
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk = "v.blk." + std::to_string(il) + ".";
        specs.push_back(ones_spec(blk + "ln1.weight", n_embd));
        push_attention(specs, blk, n_embd, b_in, /*biases =*/false);
        specs.push_back(ones_spec(blk + "attn_q_norm.weight", d));
        specs.push_back(ones_spec(blk + "attn_k_norm.weight", d));
        specs.push_back(ones_spec(blk + "attn_post_norm.weight", n_embd));
        specs.push_back(ones_spec(blk + "ln2.weight", n_embd));
        specs.push_back(uniform_spec(blk + "ffn_gate.weight", {n_embd, n_ff}, b_in));
        specs.push_back(uniform_spec(blk + "ffn_up.weight", {n_embd, n_ff}, b_in));
        specs.push_back(uniform_spec(blk + "ffn_down.weight", {n_ff, n_embd}, uniform_bound(1.0 / std::sqrt(double(n_ff)))));
        specs.push_back(ones_spec(blk + "ffn_post_norm.weight", n_embd));
    }
    // Stored (vision n_embd, text n_embd): gemma4v multiplies by it directly.
    specs.push_back(uniform_spec("mm.input_projection.weight", {n_embd, int64_t(hp.n_embd_text)}, b_in));
    return specs;
}

// Qwen2.5-VL's (RMS norms, gated SiLU feed-forward) or Qwen2-VL's (LayerNorms with biases,
// an ungated feed-forward).
std::vector<tensor_spec> qwen_tensor_specs(const clip_hparams_spec & hp) {
    const bool    qwen2  = hp.kind == projector_kind::qwen2vl;
    const int64_t n_embd = hp.n_embd;
    const int64_t n_ff   = hp.n_ff;
    const int64_t ps     = hp.patch_size;
    const int64_t merged = 4 * n_embd; // 2x2 patches side by side
    const double  b_in   = uniform_bound(1.0 / std::sqrt(double(n_embd)));
    const double  b_down = uniform_bound(1.0 / std::sqrt(double(n_ff)));

    std::vector<tensor_spec> specs;
    // Qwen's Conv3D over two frames, split into one conv2d kernel per frame; no bias.
    const double b_patch = uniform_bound(1.0 / std::sqrt(double(2 * 3 * ps * ps)));
    specs.push_back(uniform_spec("v.patch_embd.weight", {ps, ps, 3, n_embd}, b_patch));
    specs.push_back(uniform_spec("v.patch_embd.weight.1", {ps, ps, 3, n_embd}, b_patch));
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk = "v.blk." + std::to_string(il) + ".";
        specs.push_back(ones_spec(blk + "ln1.weight", n_embd));
        if (qwen2) specs.push_back(zeros_spec(blk + "ln1.bias", n_embd));
        push_attention(specs, blk, n_embd, b_in, /*biases =*/true);
        specs.push_back(ones_spec(blk + "ln2.weight", n_embd));
        if (qwen2) specs.push_back(zeros_spec(blk + "ln2.bias", n_embd));
        if (!qwen2) {
            specs.push_back(uniform_spec(blk + "ffn_gate.weight", {n_embd, n_ff}, b_in));
            specs.push_back(zeros_spec(blk + "ffn_gate.bias", n_ff));
        }
        specs.push_back(uniform_spec(blk + "ffn_up.weight", {n_embd, n_ff}, b_in));
        specs.push_back(zeros_spec(blk + "ffn_up.bias", n_ff));
        specs.push_back(uniform_spec(blk + "ffn_down.weight", {n_ff, n_embd}, b_down));
        specs.push_back(zeros_spec(blk + "ffn_down.bias", n_embd));
    }
    specs.push_back(ones_spec("v.post_ln.weight", n_embd));
    if (qwen2) specs.push_back(zeros_spec("v.post_ln.bias", n_embd));
    // The merger: 2x2 merged patches through GELU to the text model's width.
    specs.push_back(uniform_spec("mm.0.weight", {merged, merged}, uniform_bound(1.0 / std::sqrt(double(merged)))));
    specs.push_back(zeros_spec("mm.0.bias", merged));
    specs.push_back(uniform_spec("mm.2.weight", {merged, int64_t(hp.n_embd_text)}, uniform_bound(1.0 / std::sqrt(double(merged)))));
    specs.push_back(zeros_spec("mm.2.bias", hp.n_embd_text));
    return specs;
}

} // namespace

std::vector<tensor_spec> clip_tensor_specs(const clip_hparams_spec & hp) {
    if (hp.kind == projector_kind::gemma4v) return gemma4v_tensor_specs(hp);
    if (hp.qwen()) return qwen_tensor_specs(hp);
    const int64_t n_embd = hp.n_embd;
    const int64_t n_ff   = hp.n_ff;
    const int64_t ps     = hp.patch_size;
    const int64_t n_pos  = int64_t(hp.n_patches_side()) * hp.n_patches_side();

    const double b_patch = uniform_bound(1.0 / std::sqrt(double(3 * ps * ps)));
    const double b_pos   = uniform_bound(0.5); // below the patches' scale, so the image content shows
    const double b_in    = uniform_bound(1.0 / std::sqrt(double(n_embd)));
    const double b_down  = uniform_bound(1.0 / std::sqrt(double(n_ff)));

    std::vector<tensor_spec> specs;
    // A conv2d kernel (KW, KH, channels in, channels out) with stride patch_size.
    specs.push_back(uniform_spec("v.patch_embd.weight", {ps, ps, 3, n_embd}, b_patch));
    specs.push_back(zeros_spec("v.patch_embd.bias", n_embd));
    specs.push_back(uniform_spec("v.position_embd.weight", {n_embd, n_pos}, b_pos));

    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string blk = "v.blk." + std::to_string(il) + ".";
        specs.push_back(ones_spec(blk + "ln1.weight", n_embd));
        specs.push_back(zeros_spec(blk + "ln1.bias", n_embd));
        push_attention(specs, blk, n_embd, b_in, /*biases =*/true);
        specs.push_back(ones_spec(blk + "ln2.weight", n_embd));
        specs.push_back(zeros_spec(blk + "ln2.bias", n_embd));
        specs.push_back(uniform_spec(blk + "ffn_up.weight", {n_embd, n_ff}, b_in));
        specs.push_back(zeros_spec(blk + "ffn_up.bias", n_ff));
        specs.push_back(uniform_spec(blk + "ffn_down.weight", {n_ff, n_embd}, b_down));
        specs.push_back(zeros_spec(blk + "ffn_down.bias", n_embd));
    }
    specs.push_back(ones_spec("v.post_ln.weight", n_embd));
    specs.push_back(zeros_spec("v.post_ln.bias", n_embd));

    specs.push_back(ones_spec("mm.soft_emb_norm.weight", n_embd + (hp.broken_norm ? 1 : 0)));
    // Stored (text n_embd, vision n_embd); the graph multiplies by its transpose.
    specs.push_back(uniform_spec("mm.input_projection.weight", {int64_t(hp.n_embd_text), n_embd}, b_in));
    return specs;
}

void clip_set_hparams(gguf_context * ctx, const clip_hparams_spec & hp) {
    gguf_set_val_str(ctx, "general.architecture", "clip");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel projector");
    gguf_set_val_u32(ctx, "general.file_type", 0); // all F32
    gguf_set_val_bool(ctx, "clip.has_vision_encoder", true);
    gguf_set_val_str(ctx, "clip.projector_type", hp.type_name());
    if (hp.kind == projector_kind::gemma3) {
        gguf_set_val_bool(ctx, "clip.use_gelu", true);
    } // gemma4v's export names no activation: mtmd's default (quick GELU) is what it runs
    if (hp.kind == projector_kind::qwen25vl) {
        gguf_set_val_bool(ctx, "clip.use_silu", true);
        // Window attention in every layer but each second one (the real model: every eighth).
        gguf_set_val_u32(ctx, "clip.vision.n_wa_pattern", 2);
    }
    gguf_set_val_u32(ctx, "clip.vision.image_size", hp.image_size);
    gguf_set_val_u32(ctx, "clip.vision.patch_size", hp.patch_size);
    gguf_set_val_u32(ctx, "clip.vision.embedding_length", hp.n_embd);
    gguf_set_val_u32(ctx, "clip.vision.feed_forward_length", hp.n_ff);
    gguf_set_val_u32(ctx, "clip.vision.block_count", hp.n_layer);
    gguf_set_val_u32(ctx, "clip.vision.attention.head_count", hp.n_head);
    gguf_set_val_f32(ctx, "clip.vision.attention.layer_norm_epsilon", hp.eps);
    gguf_set_val_u32(ctx, "clip.vision.projection_dim", hp.n_embd_text);
    if (hp.kind == projector_kind::gemma3) {
        const float half[3] = {0.5f, 0.5f, 0.5f}; // SigLIP's mean and std: pixels map to [-1, 1]
        gguf_set_arr_data(ctx, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, half, 3);
        gguf_set_arr_data(ctx, "clip.vision.image_std", GGUF_TYPE_FLOAT32, half, 3);
    } else if (hp.qwen()) {
        const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}; // CLIP's, as Qwen's exports write
        const float std_[3] = {0.26862954f, 0.26130258f, 0.27577711f};
        gguf_set_arr_data(ctx, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
        gguf_set_arr_data(ctx, "clip.vision.image_std", GGUF_TYPE_FLOAT32, std_, 3);
    } else {
        // gemma4v's graph maps [0, 1] to [-1, 1] itself.
        const float zero[3] = {0.0f, 0.0f, 0.0f};
        const float one[3]  = {1.0f, 1.0f, 1.0f};
        gguf_set_arr_data(ctx, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, zero, 3);
        gguf_set_arr_data(ctx, "clip.vision.image_std", GGUF_TYPE_FLOAT32, one, 3);
    }
    if (hp.n_merge != hp.default_merge()) {
        gguf_set_val_u32(ctx, "clip.vision.projector.scale_factor", hp.n_merge);
    }
}
