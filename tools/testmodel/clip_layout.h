#pragma once

#include "tensor_spec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct gguf_context;

// The projector types specd-testmodel writes.
enum class projector_kind {
    // A SigLIP ViT over image_size x image_size pixels cut into patch_size patches, an
    // n_merge x n_merge average pool, an RMS norm and a projection to the text model's
    // n_embd. Every image becomes (image_size / patch_size / n_merge)^2 tokens, whatever its
    // size: the gemma3 preprocessor resizes it to image_size x image_size first.
    gemma3,
    // gemma4's vision tower: RMS-normed ViT layers with Q/K norms, post norms and a gated
    // feed-forward, 2D RoPE and x/y position tables, a 3x3 average pool, a projection. The
    // pinned mtmd resizes (bicubic) to a grid of patch_size * n_merge cells, 70 to 1120 of
    // them, so the token count follows the image's size and aspect as the real model's does
    // when patch_size is its 16.
    gemma4v,
    // Qwen2.5-VL's merger: a ViT over 14-pixel patches (two conv kernels, one per frame of a
    // two-frame clip), window attention in every layer but each n_wa_pattern-th, 2D RoPE, a
    // 2x2 merge and a two-layer MLP to the text model's n_embd. mtmd resizes each image to
    // multiples of 28 pixels (8 to 4096 tokens) and places its tokens on a grid with M-RoPE
    // positions: a chunk of nx x ny tokens advances the position by max(nx, ny).
    qwen25vl,
    // Qwen2-VL's merger: the same tensors and placement as qwen25vl, but LayerNorms (with
    // biases), an ungated feed-forward (mtmd's default, quick GELU) and full attention in
    // every layer.
    qwen2vl,
};

// Shape of a tiny vision projector (an mmproj GGUF), as the pinned mtmd's clip.cpp loads it.
struct clip_hparams_spec {
    projector_kind kind  = projector_kind::gemma3;
    uint32_t n_embd_text = 64; // the text model's n_embd (gemma3: clip.vision.projection_dim)
    uint32_t image_size  = 64;
    uint32_t patch_size  = 4;
    uint32_t n_merge     = 4;  // the pooling kernel; the type's default is written only when different
    uint32_t n_embd      = 32;
    uint32_t n_layer     = 2;
    uint32_t n_head      = 2;
    uint32_t n_ff        = 64;
    float    eps         = 1e-6f; // what the converters write
    // gemma4v: rows of each position table; above the most patches along one side of any
    // image (1120 cells in one row of n_merge patches each).
    uint32_t n_pos_table = 3360;
    // gemma3, for tests of a projector that aborts inside mtmd: mm.soft_emb_norm gets one
    // value too many. mtmd loads it without looking; the first image then fails a GGML_ASSERT
    // (the process aborts) where the graph multiplies by it.
    bool     broken_norm = false;

    const char * type_name() const {
        switch (kind) {
            case projector_kind::gemma3: return "gemma3";
            case projector_kind::gemma4v: return "gemma4v";
            case projector_kind::qwen25vl: return "qwen2.5vl_merger";
            case projector_kind::qwen2vl: return "qwen2vl_merger";
        }
        return "";
    }
    bool     qwen() const { return kind == projector_kind::qwen25vl || kind == projector_kind::qwen2vl; }
    uint32_t default_merge() const { return kind == projector_kind::gemma3 ? 4 : kind == projector_kind::gemma4v ? 3 : 2; }
    uint32_t n_patches_side() const { return image_size / patch_size; }
    uint32_t n_tokens_side() const { return n_patches_side() / n_merge; }
    uint32_t n_image_tokens() const { return n_tokens_side() * n_tokens_side(); } // gemma3's, for every image
};

// The kind whose type_name() is `name`; nullopt for any other.
std::optional<projector_kind> projector_kind_named(std::string_view name);

// Defaults of a kind: gemma3 as above; gemma4v with the real model's patch size (16), pool
// (3) and nominal image size (224); qwen25vl and qwen2vl with the real patch size (14) and
// merge (2).
clip_hparams_spec clip_hparams_default(projector_kind kind);

// Empty when valid, otherwise what is wrong (for the command line).
std::string clip_hparams_check(const clip_hparams_spec & hp);

// Every tensor clip.cpp's load_tensors reads for the kind and its graph uses (gemma3: biases
// included, as real exports have them; gemma4v: none, as its exports have none).
std::vector<tensor_spec> clip_tensor_specs(const clip_hparams_spec & hp);

// general.architecture = clip and the clip.* keys of the kind's projector.
void clip_set_hparams(gguf_context * ctx, const clip_hparams_spec & hp);
