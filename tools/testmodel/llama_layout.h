#pragma once

#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// Shape of a tiny LLM_ARCH_LLAMA model (names follow llama.cpp's llama.* GGUF keys).
struct llama_hparams_spec {
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

    uint32_t n_embd_head() const { return n_embd / n_head; }
};

// Empty when valid, otherwise what is wrong (for the command line).
std::string llama_hparams_check(const llama_hparams_spec & hp);

// Every tensor llama.cpp's llama_model_llama::load_arch_tensors requires, with an untied
// output matrix (tied embeddings make a random model echo its input token).
std::vector<tensor_spec> llama_tensor_specs(const llama_hparams_spec & hp, uint32_t n_vocab);

// general.architecture and the llama.* hyperparameters.
void llama_set_hparams(gguf_context * ctx, const llama_hparams_spec & hp, uint32_t n_vocab);
