#include "dflash_layout.h"

#include "weight_rng.h"

#include <gguf.h>

#include <cmath>

namespace {

// The score of a mask's query with a real token's key: both, normalized over a head of d
// (the whole width), are sqrt(d / n_ones) on each of the n_ones dimensions of the block of
// ones, so they meet at d * w^2 / sqrt(d) = sqrt(d) * w^2 for Q and K norm weights w.
constexpr double k_score = 40.0;
// How much the attention output outweighs the mask's own embedding in the residual.
constexpr double k_carry = 4.0;

} // namespace

std::string dflash_check(const dflash_spec & spec) {
    if (std::string problem = llama_hparams_check(spec.target); !problem.empty()) return problem;
    if (spec.target.arch != "llama") return "a DFlash fixture head drafts for a llama target";
    if (spec.n_ones == 0 || spec.n_ones >= spec.target.n_embd) return "the block of ones must leave room for the content";
    if (spec.block_size < 2) return "the block holds the continued token and at least one mask";
    for (uint32_t l : spec.layers) {
        if (l >= spec.target.n_layer) return "the head reads layers the target does not have";
    }
    return {};
}

uint32_t dflash_mask_token(uint32_t n_vocab) { return n_vocab - 1; }

std::vector<tensor_spec> dflash_tensor_specs(const dflash_spec & spec, uint32_t n_vocab) {
    const int64_t  d     = spec.target.n_embd;
    const int64_t  c     = spec.n_content();
    const int64_t  d_in  = int64_t(spec.layers.size()) * d;
    const int64_t  n_ff  = spec.n_ff;
    const uint64_t seed  = spec.target_seed;
    const int64_t  mask  = dflash_mask_token(n_vocab);

    std::vector<tensor_spec> specs;
    // Row v: the target's embedding of v over the content dimensions (the same stream and
    // bound as llama_tensor_specs), then ones; the mask: zeros, then minus ones.
    specs.push_back(custom_spec("token_embd.weight", {d, n_vocab}, [=](float * data) {
        weight_rng embd(seed, "token_embd.weight");
        for (int64_t v = 0; v < n_vocab; ++v) {
            float * row = data + v * d;
            for (int64_t i = 0; i < d; ++i) {
                const float e = embd.uniform(uniform_bound(1.0));
                row[i]        = i < c ? (v == mask ? 0.0f : e) : (v == mask ? -1.0f : 1.0f);
            }
        }
    }));
    // No output of its own: the target's (shared through ctx_other).
    specs.push_back(ones_spec("output_norm.weight", d));
    specs.push_back(ones_spec("enc.output_norm.weight", d));
    // The features -> the content dimensions only, so the cache's keys are zero.
    specs.push_back(custom_spec("fc.weight", {d_in, d}, [=](float * data) {
        weight_rng fc(seed, "dflash.fc.weight");
        for (int64_t j = 0; j < d; ++j) {
            for (int64_t i = 0; i < d_in; ++i) {
                const float w         = fc.uniform(uniform_bound(1.0 / std::sqrt(double(d_in))));
                data[j * d_in + i] = j < c ? w : 0.0f;
            }
        }
    }));

    const std::string blk = "blk.0.";
    specs.push_back(ones_spec(blk + "attn_norm.weight", d));
    // Q (a mask reads +1 on the ones) and K (a real token reads +1, a mask -1): the ones only.
    const auto ones_reader = [=](double sign) {
        return [=](float * data) {
            for (int64_t j = 0; j < d; ++j) {
                for (int64_t i = 0; i < d; ++i) data[j * d + i] = (j >= c && i >= c) ? float(sign / double(d - c)) : 0.0f;
            }
        };
    };
    specs.push_back(custom_spec(blk + "attn_q.weight", {d, d}, ones_reader(-1.0)));
    specs.push_back(custom_spec(blk + "attn_k.weight", {d, d}, ones_reader(+1.0)));
    const double qk_norm = std::sqrt(k_score / std::sqrt(double(d)));
    specs.push_back(const_spec(blk + "attn_q_norm.weight", d, qk_norm));
    specs.push_back(const_spec(blk + "attn_k_norm.weight", d, qk_norm));
    // V: the content; the output projection puts it back, scaled.
    const auto diagonal = [=](double value) {
        return [=](float * data) {
            for (int64_t j = 0; j < d; ++j) {
                for (int64_t i = 0; i < d; ++i) data[j * d + i] = (i == j && j < c) ? float(value) : 0.0f;
            }
        };
    };
    specs.push_back(custom_spec(blk + "attn_v.weight", {d, d}, diagonal(1.0)));
    specs.push_back(custom_spec(blk + "attn_output.weight", {d, d}, diagonal(k_carry)));
    specs.push_back(ones_spec(blk + "ffn_norm.weight", d));
    specs.push_back(matrix_spec(blk + "ffn_gate.weight", d, n_ff, uniform_bound(1.0 / std::sqrt(double(d)))));
    specs.push_back(matrix_spec(blk + "ffn_up.weight", d, n_ff, uniform_bound(1.0 / std::sqrt(double(d)))));
    specs.push_back({blk + "ffn_down.weight", {n_ff, d}, WEIGHT_INIT_ZEROS, 0.0, {}}); // adds nothing
    return specs;
}

void dflash_set_hparams(gguf_context * ctx, const dflash_spec & spec, uint32_t n_vocab) {
    const llama_hparams_spec & t = spec.target;
    const auto key = [](const char * name) { return std::string("dflash.") + name; };
    gguf_set_val_str(ctx, "general.architecture", "dflash");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel dflash head");
    gguf_set_val_u32(ctx, "general.file_type", 0); // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(ctx, key("vocab_size").c_str(), n_vocab);
    gguf_set_val_u32(ctx, key("context_length").c_str(), t.n_ctx_train);
    gguf_set_val_u32(ctx, key("embedding_length").c_str(), t.n_embd);
    gguf_set_val_u32(ctx, key("block_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("feed_forward_length").c_str(), spec.n_ff);
    gguf_set_val_u32(ctx, key("attention.head_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("attention.head_count_kv").c_str(), 1);
    // RoPE turns the first pair only, which Q and K leave empty: scores do not depend on
    // positions.
    gguf_set_val_u32(ctx, key("rope.dimension_count").c_str(), 2);
    gguf_set_val_f32(ctx, key("rope.freq_base").c_str(), t.rope_freq_base);
    gguf_set_val_f32(ctx, key("attention.layer_norm_rms_epsilon").c_str(), t.rms_eps);
    const std::array<int32_t, 3> layers{int32_t(spec.layers[0]), int32_t(spec.layers[1]), int32_t(spec.layers[2])};
    gguf_set_arr_data(ctx, key("target_layers").c_str(), GGUF_TYPE_INT32, layers.data(), layers.size());
    gguf_set_val_u32(ctx, key("block_size").c_str(), spec.block_size);
    gguf_set_val_u32(ctx, "tokenizer.ggml.mask_token_id", dflash_mask_token(n_vocab));
}
