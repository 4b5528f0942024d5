#include "eagle3_layout.h"

#include "weight_rng.h"

#include <gguf.h>

#include <cmath>

namespace {

// RoPE frequencies base^(-2i/n_rot) from 1 to ~10 radians per position: no distance up to the
// context length turns every pair back to where it started (see the header).
constexpr float k_rope_base = 0.1f;

// The target's matrices, as llama_tensor_specs writes them: the same streams and bounds.
double target_embd_bound() { return uniform_bound(1.0); }
double target_output_bound(const llama_hparams_spec & t) { return uniform_bound(4.0 / std::sqrt(double(t.n_embd))); }

} // namespace

std::array<uint32_t, 3> eagle3_default_layers(uint32_t n_layer_target) {
    const uint32_t last = n_layer_target == 0 ? 0 : n_layer_target - 1;
    return {0, n_layer_target / 2, last};
}

std::string eagle3_check(const eagle3_spec & spec) {
    if (std::string problem = llama_hparams_check(spec.target); !problem.empty()) return problem;
    if (spec.target.arch != "llama") return "an EAGLE3 fixture head drafts for a llama target";
    if (spec.n_extra == 0 || spec.n_extra % 32 != 0) return "the head's extra width must be a positive multiple of 32";
    if (spec.target.n_embd % 2 != 0) return "the head's attention carries the target's embedding: it must be even";
    for (uint32_t l : spec.layers) {
        if (l >= spec.target.n_layer) return "the head reads layers the target does not have";
    }
    return {};
}

std::vector<tensor_spec> eagle3_tensor_specs(const eagle3_spec & spec, uint32_t n_vocab) {
    const int64_t  d_t   = spec.target.n_embd;
    const int64_t  d_e   = spec.n_embd();
    const int64_t  d_in  = 2 * d_e; // [normalized token embedding; normalized g]
    const int64_t  hd    = spec.head_dim();
    const int64_t  n_ff  = spec.n_ff;
    const int64_t  n_one = spec.n_extra;
    const uint64_t seed  = spec.target_seed;
    // Q and K: m in the first element of every RoPE pair, so that a position's score with
    // itself is m^2 * pairs / sqrt(hd) and 40 more than with any other.
    const int64_t  pairs = hd / 2;
    const double   m     = std::sqrt(72.0 * std::sqrt(double(hd)) / double(pairs));

    std::vector<tensor_spec> specs;
    // Row v: the target's embedding of v scaled to an RMS of 1 (the target's first RMS norm
    // sees it so), then ones; the row's RMS is 1, so the head's norm leaves it as it is.
    specs.push_back(custom_spec("token_embd.weight", {d_e, n_vocab}, [=](float * data) {
        weight_rng embd(seed, "token_embd.weight");
        for (int64_t v = 0; v < n_vocab; ++v) {
            float * row = data + v * d_e;
            double  sq  = 0.0;
            for (int64_t i = 0; i < d_t; ++i) {
                row[i] = embd.uniform(target_embd_bound());
                sq += double(row[i]) * row[i];
            }
            const double scale = std::sqrt(double(d_t) / sq);
            for (int64_t i = 0; i < d_t; ++i) row[i] = float(row[i] * scale);
            for (int64_t i = d_t; i < d_e; ++i) row[i] = 1.0f;
        }
    }));
    // The target's output rows over the embedding's dimensions, nothing over the ones.
    specs.push_back(custom_spec("output.weight", {d_e, n_vocab}, [=](float * data) {
        weight_rng out(seed, "output.weight");
        for (int64_t v = 0; v < n_vocab; ++v) {
            float * row = data + v * d_e;
            for (int64_t i = 0; i < d_t; ++i) row[i] = out.uniform(target_output_bound(spec.target));
            for (int64_t i = d_t; i < d_e; ++i) row[i] = 0.0f;
        }
    }));
    specs.push_back(ones_spec("output_norm.weight", d_e));
    // The three layers' inputs -> g: any projection.
    specs.push_back(matrix_spec("fc.weight", 3 * d_t, d_e, uniform_bound(1.0 / std::sqrt(double(3 * d_t)))));

    const std::string blk = "blk.0.";
    specs.push_back(ones_spec(blk + "attn_norm.weight", d_e));
    specs.push_back(const_spec(blk + "attn_norm_2.weight", d_e, spec.hidden_weight));
    const auto qk = [=](float * data) {
        for (int64_t j = 0; j < hd; ++j) {
            float * row = data + j * d_in;
            for (int64_t i = 0; i < d_in; ++i) row[i] = 0.0f;
            if (j % 2 == 0 && !spec.uniform_attention) {
                for (int64_t i = d_t; i < d_t + n_one; ++i) row[i] = float(m / double(n_one));
            }
        }
    };
    specs.push_back(custom_spec(blk + "attn_q.weight", {d_in, hd}, qk));
    specs.push_back(custom_spec(blk + "attn_k.weight", {d_in, hd}, qk));
    // V: the token's embedding; the output projection puts it back in its dimensions.
    specs.push_back(custom_spec(blk + "attn_v.weight", {d_in, hd}, [=](float * data) {
        for (int64_t j = 0; j < hd; ++j) {
            float * row = data + j * d_in;
            for (int64_t i = 0; i < d_in; ++i) row[i] = i == j ? 1.0f : 0.0f;
        }
    }));
    specs.push_back(custom_spec(blk + "attn_output.weight", {hd, d_e}, [=](float * data) {
        for (int64_t j = 0; j < d_e; ++j) {
            float * row = data + j * hd;
            for (int64_t i = 0; i < hd; ++i) row[i] = i == j ? 1.0f : 0.0f;
        }
    }));
    specs.push_back(ones_spec(blk + "ffn_norm.weight", d_e));
    specs.push_back(matrix_spec(blk + "ffn_gate.weight", d_e, n_ff, uniform_bound(1.0 / std::sqrt(double(d_e)))));
    specs.push_back(matrix_spec(blk + "ffn_up.weight", d_e, n_ff, uniform_bound(1.0 / std::sqrt(double(d_e)))));
    specs.push_back(custom_spec(blk + "ffn_down.weight", {n_ff, d_e}, [=](float * data) { // adds nothing
        for (int64_t i = 0; i < n_ff * d_e; ++i) data[i] = 0.0f;
    }));
    return specs;
}

void eagle3_set_hparams(gguf_context * ctx, const eagle3_spec & spec, uint32_t n_vocab) {
    const llama_hparams_spec & t = spec.target;
    const auto key = [](const char * name) { return std::string("eagle3.") + name; };
    gguf_set_val_str(ctx, "general.architecture", "eagle3");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel eagle3 head");
    gguf_set_val_u32(ctx, "general.file_type", 0); // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(ctx, key("vocab_size").c_str(), n_vocab);
    gguf_set_val_u32(ctx, key("context_length").c_str(), t.n_ctx_train);
    gguf_set_val_u32(ctx, key("embedding_length").c_str(), spec.n_embd());
    gguf_set_val_u32(ctx, key("block_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("feed_forward_length").c_str(), spec.n_ff);
    gguf_set_val_u32(ctx, key("attention.head_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("attention.head_count_kv").c_str(), 1);
    gguf_set_val_u32(ctx, key("attention.key_length").c_str(), spec.head_dim());
    gguf_set_val_u32(ctx, key("attention.value_length").c_str(), spec.head_dim());
    gguf_set_val_u32(ctx, key("rope.dimension_count").c_str(), spec.head_dim());
    gguf_set_val_f32(ctx, key("rope.freq_base").c_str(), k_rope_base);
    gguf_set_val_f32(ctx, key("attention.layer_norm_rms_epsilon").c_str(), t.rms_eps);
    const std::array<int32_t, 3> layers{int32_t(spec.layers[0]), int32_t(spec.layers[1]), int32_t(spec.layers[2])};
    gguf_set_arr_data(ctx, key("target_layers").c_str(), GGUF_TYPE_INT32, layers.data(), layers.size());
    gguf_set_val_u32(ctx, key("target_hidden_size").c_str(), t.n_embd);
    // The residual takes g normalized (and scaled by the hidden norm's weight), not raw.
    gguf_set_val_bool(ctx, key("norm_before_residual").c_str(), true);
}
