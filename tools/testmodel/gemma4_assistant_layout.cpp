#include "gemma4_assistant_layout.h"

#include "weight_rng.h"

#include <gguf.h>

#include <cmath>

std::string gemma4_assistant_check(const gemma4_assistant_spec & spec) {
    if (std::string problem = gemma4_hparams_check(spec.target); !problem.empty()) return problem;
    if (spec.n_extra == 0 || spec.n_extra % 32 != 0) {
        // The head's width must differ from the target's (libllama checks), and stay a
        // multiple of 32 so that its matrices can be quantized.
        return "the assistant's extra width must be a positive multiple of 32";
    }
    if (spec.target.output_dims % 32 != 0) return "--output-dims must be a multiple of 32";
    // libllama tells the head's width from the target's hidden size it reads.
    if (spec.n_embd() == spec.target.n_embd) return "--output-dims + 32 must differ from --n-embd";
    if (spec.n_layer < 2) return "an assistant needs a sliding-window and a full-attention layer";
    if (spec.n_head % spec.target.n_head_kv != 0) return "the assistant's heads must be a multiple of the target's KV heads";
    // It reads the target's last layer (full attention) and the one before (sliding window).
    const uint32_t last = spec.target.n_layer - 1;
    if (!spec.target.is_full(last) || spec.target.is_full(last - 1)) {
        return "the target's last layer must attend to the whole context and the one before it to a window";
    }
    return {};
}

std::vector<tensor_spec> gemma4_assistant_tensor_specs(const gemma4_assistant_spec & spec, uint32_t n_vocab) {
    const int64_t d_t    = spec.target.n_embd;
    const int64_t d_r    = spec.target.read_dims(); // what the target's output reads
    const int64_t d_a    = spec.n_embd();
    const int64_t n_ff   = spec.n_ff;
    const double  b_in   = uniform_bound(1.0 / std::sqrt(double(d_a)));
    const double  b_out  = gemma4_output_bound(spec.target);
    const uint64_t target_seed = spec.target_seed;

    std::vector<tensor_spec> specs;
    // The head's output matrix (tied to its token embedding, which the graph never reads: the
    // input token is embedded with the target's table). Row v: the part of the target's output
    // row v that it reads (drawn as the target draws it: its whole row, the same stream), then
    // random values for the hidden state's dimensions.
    specs.push_back(custom_spec("token_embd.weight", {d_a, n_vocab}, [=](float * data) {
        weight_rng target_rows(target_seed, "output.weight");
        weight_rng extra(target_seed, "assistant.output.extra");
        for (int64_t v = 0; v < n_vocab; ++v) {
            float * row = data + v * d_a;
            for (int64_t i = 0; i < d_t; ++i) {
                const float x = target_rows.uniform(b_out);
                if (i < d_r) row[i] = x;
            }
            for (int64_t i = d_r; i < d_a; ++i) row[i] = extra.uniform(b_out);
        }
    }));
    specs.push_back(ones_spec("output_norm.weight", d_a));
    // [token embedding; hidden state] (2 d_t) -> d_a: the embedding's first d_r dimensions
    // unchanged, the hidden state into the extra dimensions through hidden_weight times a
    // random projection.
    const double b_hidden = uniform_bound(spec.hidden_weight / std::sqrt(double(d_t)));
    specs.push_back(custom_spec("nextn.pre_projection.weight", {2 * d_t, d_a}, [=](float * data) {
        weight_rng hidden(target_seed, "assistant.pre_projection.hidden");
        for (int64_t j = 0; j < d_a; ++j) {
            float * row = data + j * 2 * d_t;
            for (int64_t i = 0; i < 2 * d_t; ++i) row[i] = 0.0f;
            if (j < d_r) row[j] = 1.0f;
            else for (int64_t i = d_t; i < 2 * d_t; ++i) row[i] = hidden.uniform(b_hidden);
        }
    }));
    // One table for the full-attention layers, as in the target.
    specs.push_back(ones_spec("rope_freqs.weight", spec.target.head_dim / 2));
    // What the head hands its next step as the hidden state: any projection back to d_t.
    specs.push_back(matrix_spec("nextn.post_projection.weight", d_a, d_t, uniform_bound(1.0 / std::sqrt(double(d_a)))));

    for (uint32_t il = 0; il < spec.n_layer; ++il) {
        const std::string blk = "blk." + std::to_string(il) + ".";
        const int64_t     d   = spec.is_full(il) ? spec.target.head_dim : spec.target.head_dim_swa;
        const int64_t     n_q = d * spec.n_head;
        specs.push_back(ones_spec(blk + "attn_norm.weight", d_a));
        specs.push_back(matrix_spec(blk + "attn_q.weight", d_a, n_q, b_in));
        specs.push_back(matrix_spec(blk + "attn_output.weight", n_q, d_a, uniform_bound(1.0 / std::sqrt(double(n_q)))));
        specs.push_back(ones_spec(blk + "attn_q_norm.weight", d));
        // Zero post norms: the layer adds nothing to the residual stream (see the header).
        specs.push_back(const_spec(blk + "post_attention_norm.weight", d_a, 0.0));
        specs.push_back(ones_spec(blk + "layer_output_scale.weight", 1));
        specs.push_back(ones_spec(blk + "ffn_norm.weight", d_a));
        specs.push_back(matrix_spec(blk + "ffn_gate.weight", d_a, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_up.weight", d_a, n_ff, b_in));
        specs.push_back(matrix_spec(blk + "ffn_down.weight", n_ff, d_a, uniform_bound(1.0 / std::sqrt(double(n_ff)))));
        specs.push_back(const_spec(blk + "post_ffw_norm.weight", d_a, 0.0));
    }
    return specs;
}

void gemma4_assistant_set_hparams(gguf_context * ctx, const gemma4_assistant_spec & spec, uint32_t n_vocab) {
    const gemma4_hparams_spec & t = spec.target;
    const std::string a = "gemma4-assistant.";
    const auto key = [&](const char * name) { return a + name; };
    gguf_set_val_str(ctx, "general.architecture", "gemma4-assistant");
    gguf_set_val_str(ctx, "general.name", "specd-testmodel gemma4 assistant");
    gguf_set_val_u32(ctx, "general.file_type", 0); // LLAMA_FTYPE_ALL_F32
    gguf_set_val_u32(ctx, key("vocab_size").c_str(), n_vocab);
    gguf_set_val_u32(ctx, key("context_length").c_str(), t.n_ctx_train);
    gguf_set_val_u32(ctx, key("embedding_length").c_str(), spec.n_embd());
    gguf_set_val_u32(ctx, key("embedding_length_out").c_str(), t.n_embd); // the target's hidden size
    gguf_set_val_u32(ctx, key("block_count").c_str(), spec.n_layer);
    gguf_set_val_u32(ctx, key("nextn_predict_layers").c_str(), spec.n_layer);
    gguf_set_val_u32(ctx, key("feed_forward_length").c_str(), spec.n_ff);
    gguf_set_val_u32(ctx, key("attention.head_count").c_str(), spec.n_head);
    gguf_set_val_u32(ctx, key("attention.head_count_kv").c_str(), t.n_head_kv);
    gguf_set_val_u32(ctx, key("attention.key_length").c_str(), t.head_dim);
    gguf_set_val_u32(ctx, key("attention.value_length").c_str(), t.head_dim);
    gguf_set_val_u32(ctx, key("attention.key_length_swa").c_str(), t.head_dim_swa);
    gguf_set_val_u32(ctx, key("attention.value_length_swa").c_str(), t.head_dim_swa);
    gguf_set_val_u32(ctx, key("rope.dimension_count").c_str(), t.head_dim);
    gguf_set_val_u32(ctx, key("rope.dimension_count_swa").c_str(), t.head_dim_swa);
    gguf_set_val_f32(ctx, key("rope.freq_base").c_str(), t.rope_base);
    gguf_set_val_f32(ctx, key("rope.freq_base_swa").c_str(), t.rope_base_swa);
    gguf_set_val_u32(ctx, key("attention.sliding_window").c_str(), t.n_swa);
    std::vector<uint8_t> sliding(spec.n_layer);
    for (uint32_t il = 0; il < spec.n_layer; ++il) sliding[il] = !spec.is_full(il);
    gguf_set_arr_data(ctx, key("attention.sliding_window_pattern").c_str(), GGUF_TYPE_BOOL, sliding.data(), spec.n_layer);
    gguf_set_val_f32(ctx, key("attention.layer_norm_rms_epsilon").c_str(), t.rms_eps);
    gguf_set_val_u32(ctx, key("embedding_length_per_layer_input").c_str(), 0);
}
