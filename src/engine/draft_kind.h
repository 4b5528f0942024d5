#pragma once
// What drafts for a model, told from the DRAFT GGUF's architecture: a separate draft model
// (any causal LM with the target's vocabulary, run in a context of its own), or a head that
// reads the target's hidden state: gemma4's assistant (which also reads the target's own KV
// cache) or EAGLE3 (which reads three of the target's layers' inputs and keeps a cache of its
// own). The Modelfile's DRAFT line takes any; create checks that the pair fits, the runner
// builds the drafter the kind names (engine/draft_model, engine/head_draft). A model without a
// DRAFT that carries MTP layers of its own (nextn layers: GLM-4.5, Qwen3.5, DeepSeek's) drafts
// with them (builtin_draft_kind).
#include "engine/gguf_info.h"

#include <optional>
#include <string>
#include <string_view>

namespace specd::engine {

enum class DraftKind {
    model,            // a separate draft model
    gemma4_assistant, // gemma4's MTP assistant (architecture gemma4-assistant)
    eagle3,           // an EAGLE3 head (architecture eagle3)
    mtp,              // the target's own nextn layer, in a context of its own (no DRAFT)
    dflash,           // a DFlash head (architecture dflash): a block drafted in one decode
};

DraftKind draft_kind_of(std::string_view architecture);
// mtp when a model (without a DRAFT) drafts with the MTP layer it carries: one nextn layer
// (`<arch>.nextn_predict_layers`) in an architecture whose graph in the pinned llama.cpp runs
// it; nullopt otherwise (no layer, several chained ones, or a graph that only keeps them).
std::optional<DraftKind> builtin_draft_kind(const GgufInfo & model);
// As /api/show and the speculation counters name it: "draft-model", "gemma4-assistant", ...
std::string_view draft_kind_name(DraftKind kind);
// A head that drafts from the target's hidden state (and needs the target's context).
inline bool is_head(DraftKind kind) { return kind != DraftKind::model; }
// Whether the drafter keeps a KV cache of its own (a draft model, EAGLE3) rather than reading
// the target's.
inline bool has_own_cache(DraftKind kind) {
    return kind != DraftKind::gemma4_assistant;
}
// The most tokens one micro-batch of the drafter's context holds, beside a target context of
// `n_seq` sequences whose decodes hold up to `target_tokens`: what its logits buffer is sized
// for. A draft model's context is sized like the target's; gemma4's assistant decodes one
// token per sequence; EAGLE3 and an MTP layer take a target decode's tokens in micro-batches
// of at most 64 (or n_seq), since a large vocabulary's logits for 512 tokens are hundreds of
// megabytes.
int32_t draft_ubatch(DraftKind kind, int n_seq, int32_t target_tokens);

// Empty when the GGUF `draft` can draft for `target`, else why not (a 400 at create). The
// vocabularies are compared elsewhere (gguf_vocab_mismatch).
std::string draft_refusal(const GgufInfo & target, const GgufInfo & draft);

} // namespace specd::engine
