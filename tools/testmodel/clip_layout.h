#pragma once

#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// Shape of a tiny gemma3 vision projector (an mmproj GGUF), as the pinned mtmd's clip.cpp
// loads it: a SigLIP ViT over image_size x image_size pixels cut into patch_size patches, an
// n_merge x n_merge average pool, an RMS norm and a projection to the text model's n_embd.
// Every image becomes (image_size / patch_size / n_merge)^2 tokens, whatever its size: the
// gemma3 preprocessor resizes it to image_size x image_size first.
struct clip_hparams_spec {
    uint32_t n_embd_text = 64; // clip.vision.projection_dim: must equal the text model's n_embd
    uint32_t image_size  = 64;
    uint32_t patch_size  = 4;
    uint32_t n_merge     = 4;  // gemma3's pooling kernel; clip.cpp's default, written only when different
    uint32_t n_embd      = 32;
    uint32_t n_layer     = 2;
    uint32_t n_head      = 2;
    uint32_t n_ff        = 64;
    float    eps         = 1e-6f; // what the gemma3 converter writes

    uint32_t n_patches_side() const { return image_size / patch_size; }
    uint32_t n_tokens_side() const { return n_patches_side() / n_merge; }
    uint32_t n_image_tokens() const { return n_tokens_side() * n_tokens_side(); }
};

// Empty when valid, otherwise what is wrong (for the command line).
std::string clip_hparams_check(const clip_hparams_spec & hp);

// Every tensor clip.cpp's load_tensors reads for PROJECTOR_TYPE_GEMMA3 and the SigLIP graph
// uses (biases included, as real exports have them).
std::vector<tensor_spec> clip_tensor_specs(const clip_hparams_spec & hp);

// general.architecture = clip and the clip.* keys of a gemma3 vision projector.
void clip_set_hparams(gguf_context * ctx, const clip_hparams_spec & hp);
