#pragma once

#include "gemma4_layout.h"
#include "tensor_spec.h"

#include <cstdint>
#include <string>
#include <vector>

struct gguf_context;

// A gemma4 assistant (LLM_ARCH_GEMMA4_ASSISTANT, keys gemma4-assistant.*): the MTP head that
// drafts for a gemma4 target. It has no KV cache of its own: its sliding-window and
// full-attention layers read the target's last two layers' K/V, and its input is the drafted
// token's target embedding beside the target's final hidden state (the post-norm row that
// chose that token).
//
// A fixture head with a dialed agreement: its input projection passes the token's embedding
// through unchanged, its layers add nothing (their post norms are zero), and its output
// matrix repeats the target's output rows in the embedding's dimensions. So its choice is the
// target's next-token function with every layer switched off, f(token) = argmax o_v . e_token,
// and the target, written with all its layers scaled by alpha (gemma4_hparams_spec), agrees
// with it as often as alpha allows (1 at alpha 0). The hidden state enters through
// `hidden_weight` times a random projection into the extra dimensions: small, so the head's
// choice mostly stays f, but a head fed the wrong row drafts differently.
//
// Where the target's output reads only its first `output_dims` dimensions, the head needs
// only those: it is output_dims + n_extra wide. A real gemma4 assistant is narrow (256 against
// its target's 1536 and more), so its own step, dominated by its projection onto the
// vocabulary, costs a small fraction of the target's; a head as wide as the target costs
// several times that, which under load decides whether drafting pays.
struct gemma4_assistant_spec {
    gemma4_hparams_spec target;             // the target it drafts for (its seed: `target_seed`)
    uint64_t            target_seed = 1;
    uint32_t            n_extra     = 32;    // the head's width beyond the target's
    uint32_t            n_layer     = 2;     // a sliding-window layer, then a full-attention one
    uint32_t            n_head      = 4;
    uint32_t            n_ff        = 128;
    double              hidden_weight = 0.01;

    uint32_t n_embd() const { return target.read_dims() + n_extra; }
    bool     is_full(uint32_t il) const { return il + 1 == n_layer; }
};

// Empty when valid, otherwise what is wrong.
std::string gemma4_assistant_check(const gemma4_assistant_spec & spec);

std::vector<tensor_spec> gemma4_assistant_tensor_specs(const gemma4_assistant_spec & spec, uint32_t n_vocab);

// general.architecture = gemma4-assistant and its hyperparameters.
void gemma4_assistant_set_hparams(gguf_context * ctx, const gemma4_assistant_spec & spec, uint32_t n_vocab);
