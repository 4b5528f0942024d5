#pragma once
// Plain request data shared by the api, scheduler and engine layers (no JSON below api/).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace specd {

// Defaults are Ollama's (see its API docs), so an existing client sees the same behaviour.
struct SamplingOptions {
    float   temperature       = 0.8f;
    int32_t top_k             = 40;
    float   top_p             = 0.9f;
    float   min_p             = 0.0f;
    float   typical_p         = 1.0f;
    float   repeat_penalty    = 1.0f;
    int32_t repeat_last_n     = 64;
    float   presence_penalty  = 0.0f;
    float   frequency_penalty = 0.0f;
    int64_t seed              = -1; // -1: a fresh random seed per request
    int32_t mirostat          = 0;  // 1, 2: mirostat instead of top-k/typical/top-p/min-p
    float   mirostat_tau      = 5.0f;
    float   mirostat_eta      = 0.1f;
    // Added to a token's logit before anything else (OpenAI's logit_bias): (token id, bias).
    std::vector<std::pair<int32_t, float>> logit_bias = {};
};

// Options that shape the loaded context: a request that changes them reloads the model.
struct ContextOptions {
    int32_t num_ctx    = 4096;
    int32_t num_batch  = 512;
    int32_t num_thread = 0; // 0: measured at load
    // Unset: the engine decides (engine::maps_weights); set: the request's use_mmap.
    std::optional<bool> use_mmap;
    // Ollama's num_gpu: layers to offload to the devices besides the CPU (GPUs, RPC workers);
    // unset or -1: as many as fit. Without such devices every layer stays on the CPU either way.
    std::optional<int32_t> num_gpu;
    // Ollama's main_gpu: the offload device (its index among them) a model goes to when it fits
    // on one; unset: the one with the most free memory. A model that fits on none is spread.
    std::optional<int32_t> main_gpu;

    bool operator==(const ContextOptions &) const = default;
};

// The context a model gets for `num_ctx`: no more than it was trained for (`trained` <= 0:
// unknown, no limit), as Ollama clamps it. The memory estimate and the session both use it.
inline int32_t effective_num_ctx(int32_t num_ctx, int64_t trained) {
    if (trained > 0 && num_ctx > trained) return static_cast<int32_t>(trained);
    return num_ctx < 1 ? 1 : num_ctx;
}

// Everything about one generation that is not the prompt itself.
struct GenerateOptions {
    SamplingOptions          sampling;
    int32_t                  num_predict = -1; // -1: until end of generation; -2: fill the context
    int32_t                  num_keep    = 4;
    std::vector<std::string> stop;
    bool                     truncate = true; // false: a prompt over the context is an error
    bool                     shift    = true; // false: reaching the context end ends the answer
    std::string              grammar;         // GBNF; empty: unconstrained
    // `format` answers end once the text is one complete JSON value: after that the grammar
    // allows only whitespace, which a model may otherwise emit until num_predict runs out.
    bool                     end_on_complete_json = false;
    // Caps the speculation depth for this request; 0 turns drafting off, -1 leaves the
    // depth to the controller.
    int32_t                  draft_num_predict = -1;
    // Draft exactly this many tokens every round (at most draft_num_predict) instead of
    // asking the depth controller, like llama-server's fixed draft depth; options.draft_depth.
    std::optional<int32_t>   draft_fixed_k;
    // Verify drafts by rejection sampling instead of comparing them with the target's seeded
    // draw: exact too, but the text then depends on what was drafted. The API sets it only for
    // requests without a seed, and only with SPECD_UNSEEDED_SAMPLING=rejection.
    bool                     rejection_sampling = false;
    // Report each answer token's log-probability with this many alternatives (0..20);
    // -1: none (computing them costs O(n_vocab) per token).
    int32_t                  logprobs = -1;
};

// Counts and timings of one generation, as Ollama's final object reports them.
struct GenerateStats {
    int32_t prompt_eval_count = 0; // prompt tokens evaluated (not counting reused ones)
    int32_t prompt_count      = 0; // prompt positions, reused ones and images included
    int64_t prompt_eval_ns    = 0;
    int32_t eval_count        = 0; // tokens generated
    int64_t eval_ns           = 0;
    // Images evaluated for this prompt (reused ones not counted): part of prompt_eval_ns.
    int32_t image_count       = 0;
    int32_t image_tokens      = 0;
    int64_t image_encode_ns   = 0; // the projector's vision encoder
    int64_t image_decode_ns   = 0; // the text model over the image embeddings
};

// Drafting under a grammar (`format`): text the grammar forces, proposed at no cost, and
// drafter runs cut at their first illegal token.
struct GrammarDraftStats {
    int64_t forced           = 0; // tokens proposed from forced text
    int64_t forced_accepted  = 0; // of those, accepted by the target
    int64_t truncated_rounds = 0; // rounds whose draft was cut
    int64_t truncated_tokens = 0; // draft tokens cut
    int64_t no_legal_draft   = 0; // rounds whose draft was illegal from its first token
    // Time the target side spent in the grammar (checks, masks, accepts, forced text, draft
    // validation); the draft model's own grammar work is part of its drafting time.
    int64_t grammar_ns       = 0;
};

enum class DoneReason { stop, length, load, unload };

inline const char * done_reason_name(DoneReason r) {
    switch (r) {
        case DoneReason::stop:   return "stop";
        case DoneReason::length: return "length";
        case DoneReason::load:   return "load";
        case DoneReason::unload: return "unload";
    }
    return "stop";
}

} // namespace specd
