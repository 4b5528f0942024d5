#pragma once

#include "llama_layout.h"
#include "tensor_spec.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// A DFlash head (LLM_ARCH_DFLASH, keys dflash.*) for a llama target: one layer whose cache
// holds at P its encoding (`fc`, then a norm) of the inputs to three of the target's layers
// at P, and which drafts a block in one decode: the token it continues, then a mask token at
// every position to draft, all attending to each other and to the cache.
//
// A fixture head with a dialed agreement on the block's first drafted token: its own token
// embedding is the target's first `n_content` dimensions beside a block of ones (the mask
// token: zeros beside minus ones), and Q and K (one head as wide as the model) read only that
// block, so every mask attends to
// the block's real tokens (score +40), not to other masks (-40) nor to the cache (whose K
// is zero: the encoding fills the content dimensions only; 0). V and the output projection
// carry the continued token's content to the masks, the feed-forward adds nothing, and the
// output is the target's, which reads the content dimensions only (llama_hparams_spec's
// output_dims). So every mask chooses f(token), the target's next-token function with every
// layer off: the first drafted token agrees with the target as often as alpha allows, the
// later ones only by chance (the fixture cannot compose f; a trained head does).
struct dflash_spec {
    llama_hparams_spec      target;        // the target it drafts for (its seed: `target_seed`)
    uint64_t                target_seed = 1;
    std::array<uint32_t, 3> layers{};      // the target layers whose inputs it reads
    uint32_t                n_ones     = 16; // the block of ones at the end of the embedding
    uint32_t                n_ff       = 128;
    uint32_t                block_size = 16;

    uint32_t n_content() const { return target.n_embd - n_ones; }
};

// Empty when valid, otherwise what is wrong.
std::string dflash_check(const dflash_spec & spec);

// The token the head's vocabulary names as its mask (tokenizer.ggml.mask_token_id).
uint32_t dflash_mask_token(uint32_t n_vocab);

std::vector<tensor_spec> dflash_tensor_specs(const dflash_spec & spec, uint32_t n_vocab);

// general.architecture = dflash and its hyperparameters (the tokenizer's mask id too).
void dflash_set_hparams(gguf_context * ctx, const dflash_spec & spec, uint32_t n_vocab);
