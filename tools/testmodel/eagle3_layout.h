#pragma once

#include "llama_layout.h"
#include "tensor_spec.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// An EAGLE3 head (LLM_ARCH_EAGLE3, keys eagle3.*) for a llama target: one decoder layer with
// a KV cache of its own. At position P it reads the token at P+1 beside g_P, a projection
// (`fc`) of the target's inputs to three of its layers at P, and drafts the token at P+2; its
// own pre-norm state becomes the next step's g.
//
// A fixture head with a dialed agreement: the token reaches the output through attention
// alone (EAGLE3's residual carries g, not the token), so attention is made to look at the
// position itself and nowhere else. The head's own token embedding is the target's,
// normalized, beside a block of ones; Q and K read only the ones, the same vector in every
// RoPE pair, with frequencies from a base below 1 so that no other distance within the
// context lines all pairs up again (self scores 32 pairs, any other distance at most ~15 of
// them; scaled, a gap of ~40 in the softmax's exponent). V and the output projection pass
// the token's embedding through; the feed-forward adds nothing. So the head's choice is the
// target's next-token function with every layer off, f(token) = argmax o_v . e_token, and the
// target, written with all its layers scaled by alpha, agrees with it as often as alpha
// allows. g enters the residual through `hidden_weight` (the hidden norm's weight): small, so
// the choice mostly stays f, but a head fed the wrong features drafts differently.
struct eagle3_spec {
    llama_hparams_spec      target;     // the target it drafts for (its seed: `target_seed`)
    uint64_t                target_seed = 1;
    std::array<uint32_t, 3> layers{};   // the target layers whose inputs it reads
    uint32_t                n_extra = 32; // the block of ones beside the token's embedding
    uint32_t                n_ff    = 128;
    double                  hidden_weight = 0.01;
    // For tests of how a head's cache is fed: attention weighs every position alike (Q and K
    // are zero), so what the head drafts depends on every pair its cache holds.
    bool                    uniform_attention = false;

    uint32_t n_embd() const { return target.n_embd + n_extra; }
    uint32_t head_dim() const { return target.n_embd; } // V carries the whole embedding
};

// The extract layers a head reads by default: the first, the middle and the last.
std::array<uint32_t, 3> eagle3_default_layers(uint32_t n_layer_target);

// Empty when valid, otherwise what is wrong.
std::string eagle3_check(const eagle3_spec & spec);

std::vector<tensor_spec> eagle3_tensor_specs(const eagle3_spec & spec, uint32_t n_vocab);

// general.architecture = eagle3 and its hyperparameters.
void eagle3_set_hparams(gguf_context * ctx, const eagle3_spec & spec, uint32_t n_vocab);
