#pragma once

#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// Shape of a tiny LLM_ARCH_LLAMA model (names follow llama.cpp's llama.* GGUF keys), or of
// a model with the same tensors under another architecture: qwen2vl (the text side of
// Qwen2-VL and Qwen2.5-VL), whose RoPE is M-RoPE (positions in sections for time, height and
// width; images place their tokens on a grid).
struct llama_hparams_spec {
    std::string arch     = "llama"; // or "qwen2vl"
    uint32_t n_embd      = 64;
    uint32_t n_layer     = 2;
    uint32_t n_head      = 4;
    uint32_t n_head_kv   = 4;
    uint32_t n_ff        = 128;
    uint32_t n_ctx_train = 4096;
    float    rms_eps     = 1e-5f;
    float    rope_freq_base = 10000.0f;

    // Layers from this index on have their residual-stream outputs (attn_output, ffn_down)
    // multiplied by residual_scale. A plain model has none; a pair's target scales the
    // layers it adds on top of the draft's.
    uint32_t scaled_from_layer = UINT32_MAX;
    double   residual_scale    = 1.0;

    // The output matrix reads only the first `output_dims` dimensions of the hidden state
    // (0: all): a DFlash fixture head keeps the rest for its own use.
    uint32_t output_dims = 0;

    uint32_t n_embd_head() const { return n_embd / n_head; }
};

// Empty when valid, otherwise what is wrong (for the command line).
std::string llama_hparams_check(const llama_hparams_spec & hp);

// Every tensor llama.cpp's llama_model_llama::load_arch_tensors requires, with an untied
// output matrix (tied embeddings make a random model echo its input token).
std::vector<tensor_spec> llama_tensor_specs(const llama_hparams_spec & hp, uint32_t n_vocab);

// general.architecture and the <arch>.* hyperparameters (qwen2vl: with its M-RoPE sections,
// [s, t, t, 0] over half the head size, as the converter writes them).
void llama_set_hparams(gguf_context * ctx, const llama_hparams_spec & hp, uint32_t n_vocab);
