#pragma once
// What drafts for a model, told from the DRAFT GGUF's architecture: a separate draft model
// (any causal LM with the target's vocabulary, run in a context of its own), or a head that
// reads the target's hidden state and, for gemma4's assistant, the target's own KV cache. The
// Modelfile's DRAFT line takes either; create checks that the pair fits, the runner builds
// the drafter the kind names (engine/draft_model, engine/head_draft).
#include "engine/gguf_info.h"

#include <string>
#include <string_view>

namespace specd::engine {

enum class DraftKind {
    model,            // a separate draft model
    gemma4_assistant, // gemma4's MTP assistant (architecture gemma4-assistant)
    eagle3,           // recognized, not served yet
    dflash,           // recognized, not served yet
};

DraftKind draft_kind_of(std::string_view architecture);
// As /api/show and the speculation counters name it: "draft-model", "gemma4-assistant", ...
std::string_view draft_kind_name(DraftKind kind);
// A head that drafts from the target's hidden state (and needs the target's context).
inline bool is_head(DraftKind kind) { return kind != DraftKind::model; }

// Empty when the GGUF `draft` can draft for `target`, else why not (a 400 at create). The
// vocabularies are compared elsewhere (gguf_vocab_mismatch).
std::string draft_refusal(const GgufInfo & target, const GgufInfo & draft);

} // namespace specd::engine
