#pragma once

#include "llama_layout.h"
#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// A tiny glm4moe model (GLM-4.5's architecture, keys glm4moe.*) that carries one MTP layer
// (a nextn layer, block index n_layer), for the drafter that runs a model's own MTP layer.
// The trunk is llama's dense layout under GLM's names (its pre-FFN norm is
// `post_attention_norm`; every trunk layer is a leading dense one); the nextn layer is GLM's:
// it reads the token at P+1 (enorm) beside the trunk's final hidden state at P (hnorm), mixes
// them (eh_proj), runs one attention layer over a cache of its own and a mixture of experts
// with a shared expert, and drafts the token at P+2 through the model's output.
//
// A fixture layer with a dialed agreement: eh_proj passes the token's normalized embedding
// through and adds the hidden state scaled by `hidden_weight` (hnorm's weight); attention
// adds a little (`attention_weight` of a unit-scale output: what the layer's cache holds
// changes a draft now and then, so a cache fed wrong shows), the experts add nothing. So its
// choice is the trunk's next-token function with every layer off, f(token) = argmax
// o_v . e_token, and the trunk, written with all its layers scaled by alpha, agrees with it
// as often as alpha allows (specd-testmodel mtp calibrates alpha).
struct glm4moe_mtp_spec {
    uint32_t n_expert         = 2;
    uint32_t n_ff_exp         = 32;
    double   hidden_weight    = 0.01;
    double   attention_weight = 0.05;
};

struct glm4moe_write_params {
    llama_hparams_spec hparams; // the trunk (its arch is ignored: glm4moe)
    glm4moe_mtp_spec   mtp;
    uint64_t           seed = 1;
};

// Empty when valid, otherwise what is wrong.
std::string glm4moe_check(const glm4moe_write_params & params);

std::vector<tensor_spec> glm4moe_tensor_specs(const glm4moe_write_params & params, uint32_t n_vocab);

// general.architecture = glm4moe, its hyperparameters and nextn_predict_layers = 1.
void glm4moe_set_hparams(gguf_context * ctx, const glm4moe_write_params & params, uint32_t n_vocab);
