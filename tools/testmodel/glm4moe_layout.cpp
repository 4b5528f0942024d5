#include "glm4moe_layout.h"

#include <gguf.h>

#include <cmath>

namespace {

constexpr std::string_view k_ffn_norm = "ffn_norm.weight";

} // namespace

std::string glm4moe_check(const glm4moe_write_params & params) {
    if (std::string problem = llama_hparams_check(params.hparams); !problem.empty()) return problem;
    if (params.mtp.n_expert < 1 || params.mtp.n_ff_exp < 1) return "the MTP layer needs an expert of some width";
    return {};
}

std::vector<tensor_spec> glm4moe_tensor_specs(const glm4moe_write_params & params, uint32_t n_vocab) {
    const llama_hparams_spec & hp = params.hparams;
    // The trunk: llama's tensors (the same streams, so alpha 0 is the same function), GLM's name
    // for the norm before the feed-forward.
    std::vector<tensor_spec> specs = llama_tensor_specs(hp, n_vocab);
    for (tensor_spec & t : specs) {
        const size_t at = t.name.rfind(k_ffn_norm);
        if (at != std::string::npos && at + k_ffn_norm.size() == t.name.size()) {
            t.name.replace(at, k_ffn_norm.size(), "post_attention_norm.weight");
        }
    }

    const int64_t  d        = hp.n_embd;
    const int64_t  d_kv     = int64_t(hp.n_embd_head()) * hp.n_head_kv;
    const int64_t  n_exp    = params.mtp.n_expert;
    const int64_t  n_ff_exp = params.mtp.n_ff_exp;
    const double   b_in     = uniform_bound(1.0 / std::sqrt(double(d)));
    const std::string blk   = "blk." + std::to_string(hp.n_layer) + ".";
    specs.push_back(ones_spec(blk + "nextn.enorm.weight", d));
    specs.push_back(const_spec(blk + "nextn.hnorm.weight", d, params.mtp.hidden_weight));
    // [e; h] -> e + h: the token's embedding through, the hidden state beside it.
    specs.push_back(custom_spec(blk + "nextn.eh_proj.weight", {2 * d, d}, [=](float * data) {
        for (int64_t j = 0; j < d; ++j) {
            float * row = data + j * 2 * d;
            for (int64_t i = 0; i < 2 * d; ++i) row[i] = (i == j || i == d + j) ? 1.0f : 0.0f;
        }
    }));
    specs.push_back(ones_spec(blk + "attn_norm.weight", d));
    specs.push_back(matrix_spec(blk + "attn_q.weight", d, d, 2.0 * b_in));
    specs.push_back(matrix_spec(blk + "attn_k.weight", d, d_kv, 2.0 * b_in));
    specs.push_back(matrix_spec(blk + "attn_v.weight", d, d_kv, b_in));
    specs.push_back(matrix_spec(blk + "attn_output.weight", d, d, params.mtp.attention_weight * b_in));
    specs.push_back(ones_spec(blk + "post_attention_norm.weight", d));
    // The experts and the shared one: routed (any router), adding nothing.
    specs.push_back(matrix_spec(blk + "ffn_gate_inp.weight", d, n_exp, b_in));
    specs.push_back(zeros_spec(blk + "exp_probs_b.bias", n_exp));
    specs.push_back(uniform_spec(blk + "ffn_gate_exps.weight", {d, n_ff_exp, n_exp}, b_in));
    specs.push_back(uniform_spec(blk + "ffn_up_exps.weight", {d, n_ff_exp, n_exp}, b_in));
    specs.push_back({blk + "ffn_down_exps.weight", {n_ff_exp, d, n_exp}, WEIGHT_INIT_ZEROS, 0.0, {}});
    specs.push_back(matrix_spec(blk + "ffn_gate_shexp.weight", d, n_ff_exp, b_in));
    specs.push_back(matrix_spec(blk + "ffn_up_shexp.weight", d, n_ff_exp, b_in));
    specs.push_back({blk + "ffn_down_shexp.weight", {n_ff_exp, d}, WEIGHT_INIT_ZEROS, 0.0, {}});
    return specs;
}

void glm4moe_set_hparams(gguf_context * ctx, const glm4moe_write_params & params, uint32_t n_vocab) {
    llama_hparams_spec hp = params.hparams;
    hp.arch               = "glm4moe";
    llama_set_hparams(ctx, hp, n_vocab);
    const auto key = [](const char * name) { return std::string("glm4moe.") + name; };
    gguf_set_val_str(ctx, "general.name", "specd-testmodel glm4moe with an MTP layer");
    // The nextn layer is a block of its own after the trunk's.
    gguf_set_val_u32(ctx, key("block_count").c_str(), hp.n_layer + 1);
    gguf_set_val_u32(ctx, key("nextn_predict_layers").c_str(), 1);
    gguf_set_val_u32(ctx, key("leading_dense_block_count").c_str(), hp.n_layer);
    gguf_set_val_u32(ctx, key("expert_count").c_str(), params.mtp.n_expert);
    gguf_set_val_u32(ctx, key("expert_used_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("expert_shared_count").c_str(), 1);
    gguf_set_val_u32(ctx, key("expert_feed_forward_length").c_str(), params.mtp.n_ff_exp);
}
