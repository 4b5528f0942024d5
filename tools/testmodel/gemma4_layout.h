#pragma once

#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// Shape of a tiny dense gemma4 text model (LLM_ARCH_GEMMA4, keys gemma4.*), as the pinned
// libllama's llama_model_gemma4 loads it: interleaved sliding-window and full-attention
// layers, Q/K norms, post-attention and post-FFN norms, a GELU feed-forward, logits
// soft-capped. No experts, no per-layer embeddings, no shared-KV layers: the real E2B/E4B
// and 26B variants add those, the served path (ISWA cache, non-causal image chunks, the
// gemma4 tokenizer and its image markers) is the same.
struct gemma4_hparams_spec {
    uint32_t n_embd       = 64;
    uint32_t n_layer      = 3;   // every third layer (and only those) attends to the whole context
    uint32_t n_head       = 4;
    uint32_t n_head_kv    = 2;
    uint32_t head_dim     = 16;  // full-attention layers
    uint32_t head_dim_swa = 16;  // sliding-window layers
    uint32_t n_ff         = 128;
    uint32_t n_swa        = 256; // the sliding window, in tokens
    uint32_t n_ctx_train  = 8192;
    float    rms_eps        = 1e-6f;
    float    rope_base      = 1000000.0f;
    float    rope_base_swa  = 10000.0f;
    float    logit_softcap  = 30.0f;

    // Layers from this index on have their post-attention and post-FFN norms (what each block
    // adds to the residual stream) multiplied by residual_scale: a pair's target scales the
    // layers it adds on top of the draft's, as llama_layout does with the output matrices.
    uint32_t scaled_from_layer = UINT32_MAX;
    double   residual_scale    = 1.0;

    // The output matrix reads only the first `output_dims` dimensions of the hidden state (0:
    // all), its rows scaled so that the logits keep their spread: a narrow assistant head can
    // then carry the whole next-token function (gemma4_assistant_layout.h).
    uint32_t output_dims = 0;

    uint32_t read_dims() const { return output_dims > 0 ? output_dims : n_embd; }
    bool is_full(uint32_t il) const { return il % 3 == 2; }
};

// Empty when valid, otherwise what is wrong (for the command line).
std::string gemma4_hparams_check(const gemma4_hparams_spec & hp);

// The uniform bound of the output matrix's values: logits of std 4 over the dimensions it reads.
double gemma4_output_bound(const gemma4_hparams_spec & hp);

// Every tensor llama_model_gemma4::load_arch_tensors requires for a dense model, with an
// untied output matrix (tied embeddings make a random model echo its input token).
std::vector<tensor_spec> gemma4_tensor_specs(const gemma4_hparams_spec & hp, uint32_t n_vocab);

// general.architecture = gemma4 and the gemma4.* hyperparameters.
void gemma4_set_hparams(gguf_context * ctx, const gemma4_hparams_spec & hp, uint32_t n_vocab);
