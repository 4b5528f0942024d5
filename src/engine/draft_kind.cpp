#include "engine/draft_kind.h"

#include <algorithm>
#include <array>
#include <optional>

namespace specd::engine {

namespace {

// The architectures whose graphs in the pinned llama.cpp hand out their layers' inputs
// (llama_set_embeddings_layer_inp): an EAGLE3 or DFlash head can read no others (libllama
// would abort).
constexpr std::array<std::string_view, 17> k_layer_readable = {
    "llama",    "qwen3",     "qwen3moe",     "qwen3next", "qwen35",      "qwen35moe",   "qwen4exp",   "gemma4", "gpt-oss",
    "lfm2",     "deepseek4", "nemotron_h",   "bailingmoe3", "minimax-01", "minimax-m2", "nanbeige", "muse-glimmer",
};

// The architectures whose graphs in the pinned llama.cpp run a nextn layer as a drafter
// (LLM_GRAPH_TYPE_DECODER_MTP). Others keep such layers in the file without running them
// (glm4, exaone4).
constexpr std::array<std::string_view, 14> k_mtp_runnable = {
    "glm4moe", "glm-dsa", "deepseek2", "deepseek32", "deepseek4", "qwen35",         "qwen35moe",
    "qwen3next", "mimo2",  "step35",    "hy_v3",      "cohere2moe", "nemotron_h_moe", "bailingmoe3",
};

// Empty when a head made for a hidden size of `hidden` fits a model `width` wide (either
// unknown: it does not).
std::string width_refusal(const std::string & head, std::optional<int64_t> hidden, std::optional<int64_t> width) {
    if (hidden && width && *hidden == *width) return "";
    const auto known = [](std::optional<int64_t> v) { return v ? std::to_string(*v) : std::string("?"); };
    return head + " was made for a hidden size of " + known(hidden) + ", the model's is " + known(width);
}

// A head that reads the inputs of some of the target's layers (EAGLE3, DFlash; its keys under
// `arch`): the target's graph must hand them out, the head be made for the target's width
// (`hidden_key`) and read layers the target has (`final_ok`: the target's count itself, its
// final hidden state, is one EAGLE3 may read).
std::string layer_reader_refusal(const GgufInfo & target, const GgufInfo & draft, const std::string & arch,
                                 const std::string & hidden_key, bool final_ok) {
    if (std::find(k_layer_readable.begin(), k_layer_readable.end(), target.architecture) == k_layer_readable.end()) {
        return "a" + std::string(arch == "eagle3" ? "n " : " ") + arch + " head cannot read the layers of a " +
               target.architecture + " model";
    }
    const auto hidden = gguf_int(draft, arch + "." + hidden_key);
    const auto width  = gguf_int(target, target.architecture + ".embedding_length");
    if (auto why = width_refusal("the " + arch + " head", hidden, width); !why.empty()) return why;
    // The layers it reads (their values are there when the header was read verbose; the
    // head's context checks them again at load).
    const auto n_layer = gguf_int(target, target.architecture + ".block_count");
    for (const MetaEntry & e : draft.metadata) {
        const auto * layers = std::get_if<MetaEntry::Array>(&e.value);
        if (e.key != arch + ".target_layers" || !layers || !n_layer) continue;
        for (const MetaEntry::Scalar & v : layers->values) {
            const auto * l = std::get_if<int64_t>(&v);
            if (l && (*l < 0 || *l > *n_layer || (*l == *n_layer && !final_ok))) {
                return "the " + arch + " head reads layer " + std::to_string(*l) + ", the model has " +
                       std::to_string(*n_layer);
            }
        }
    }
    return "";
}

} // namespace

int32_t draft_ubatch(DraftKind kind, int n_seq, int32_t target_tokens) {
    const int32_t seqs = std::max(n_seq, 1);
    switch (kind) {
        case DraftKind::model: return target_tokens;
        case DraftKind::gemma4_assistant: return seqs;
        case DraftKind::eagle3:
        case DraftKind::mtp:
        case DraftKind::dflash: return std::min(target_tokens + seqs, std::max(64, seqs));
    }
    return target_tokens;
}

DraftKind draft_kind_of(std::string_view architecture) {
    if (architecture == "gemma4-assistant") return DraftKind::gemma4_assistant;
    if (architecture == "eagle3") return DraftKind::eagle3;
    if (architecture == "dflash") return DraftKind::dflash;
    return DraftKind::model;
}

std::optional<DraftKind> builtin_draft_kind(const GgufInfo & model) {
    if (std::find(k_mtp_runnable.begin(), k_mtp_runnable.end(), model.architecture) == k_mtp_runnable.end()) {
        return std::nullopt;
    }
    // Several layers are a chain, one per draft step (step35), which this drafter does not run.
    if (gguf_int(model, model.architecture + ".nextn_predict_layers").value_or(0) != 1) return std::nullopt;
    return DraftKind::mtp;
}

std::string_view draft_kind_name(DraftKind kind) {
    switch (kind) {
        case DraftKind::model: return "draft-model";
        case DraftKind::gemma4_assistant: return "gemma4-assistant";
        case DraftKind::eagle3: return "eagle3";
        case DraftKind::mtp: return "mtp";
        case DraftKind::dflash: return "dflash";
    }
    return "draft-model";
}

std::string draft_refusal(const GgufInfo & target, const GgufInfo & draft) {
    switch (draft_kind_of(draft.architecture)) {
        case DraftKind::model:
        case DraftKind::mtp: return ""; // a DRAFT is never told mtp by its architecture
        case DraftKind::eagle3: return layer_reader_refusal(target, draft, "eagle3", "target_hidden_size", true);
        case DraftKind::dflash: {
            // Its variants draft otherwise: DFlash2 through a selector over candidate lattices,
            // DSpark through a Markov head; specd reads a plain block's logits only.
            for (const GgufInfo::Tensor & t : draft.tensors) {
                if (t.name == "selector_hidden.weight") return "a DFlash2 head (with a selector) is not supported yet";
                if (t.name == "markov_w1.weight") return "a DSpark head (DFlash with a Markov head) is not supported yet";
            }
            // Its encoder takes the layers side by side, each as wide as its own layers.
            return layer_reader_refusal(target, draft, "dflash", "embedding_length", false);
        }
        case DraftKind::gemma4_assistant: break;
    }
    // The assistant reads the target's KV cache and hidden state: only a gemma4 target has
    // the layers and the width it was trained on.
    if (target.architecture != "gemma4") {
        return "a gemma4-assistant drafts for gemma4 models only, not " + target.architecture;
    }
    const auto hidden = gguf_int(draft, "gemma4-assistant.embedding_length_out");
    const auto width  = gguf_int(target, "gemma4.embedding_length");
    if (auto why = width_refusal("the assistant", hidden, width); !why.empty()) return why;
    // Per-layer arrays (as real gemma4 models may carry) are left to libllama's own checks.
    const auto differ = [&](const std::string & key) {
        const auto a = gguf_int(draft, "gemma4-assistant." + key);
        const auto b = gguf_int(target, "gemma4." + key);
        return a && b && *a != *b;
    };
    if (differ("attention.head_count_kv") || differ("attention.key_length") || differ("attention.key_length_swa")) {
        return "the assistant's attention does not match the model's KV cache (KV heads or head size differ)";
    }
    return "";
}

} // namespace specd::engine
