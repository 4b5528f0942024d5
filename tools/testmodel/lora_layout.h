#pragma once

#include "llama_layout.h"
#include "tensor_spec.h"

#include <cstdint>
#include <vector>

struct gguf_context;

// A LoRA adapter for a tiny llama model of shape `base`, as llama.cpp's
// llama_adapter_lora_init loads it: for each adapted matrix W (n_in, n_out) a pair
// <name>.lora_a (n_in, rank) and <name>.lora_b (rank, n_out), applied as
// W x + (alpha / rank) B A x.
struct lora_spec {
    llama_hparams_spec base;
    uint32_t           rank  = 8;
    float              alpha = 8.0f;
};

// Every attention and feed-forward matrix of every layer is adapted. A and B are both
// random (a trained adapter starts B at zero; a random one changes the model's answers,
// which is what tests need to see).
std::vector<tensor_spec> lora_tensor_specs(const lora_spec & spec);

// general.type = adapter, adapter.type = lora, adapter.lora.alpha and the architecture.
void lora_set_keys(gguf_context * ctx, const lora_spec & spec);
