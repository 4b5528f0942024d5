#pragma once
// One of a session's sequences and what drafts for it: its KV sequence, its sequence of the
// draft model or of the draft head (when the session has one) and prompt lookup.
#include "engine/draft_model.h"
#include "engine/head_draft.h"
#include "engine/kv_sequence.h"
#include "spec/ngram_drafter.h"

#include <cstdint>
#include <memory>

namespace specd::engine {

struct SequenceSlot {
    explicit SequenceSlot(KvSequence kv) : kv(std::move(kv)) {}
    SequenceSlot(const SequenceSlot &)             = delete;
    SequenceSlot & operator=(const SequenceSlot &) = delete;

    KvSequence                  kv;
    std::unique_ptr<DraftModel> draft;
    std::unique_ptr<HeadDraft>  head;  // instead of `draft` when the DRAFT is a head
    spec::NgramDrafter          ngram; // prompt lookup: asked first (free), then the draft model
    uint64_t                    last_used = 0;
    bool                        busy      = false;

    // What the prompt cache saves and restores beside `kv`: the draft's sequence or the head's.
    CompanionState * companion() const {
        return head ? static_cast<CompanionState *>(head.get()) : static_cast<CompanionState *>(draft.get());
    }
};

} // namespace specd::engine
