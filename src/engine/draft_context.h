#pragma once
// The draft model's llama context, one for all of a session's sequences: each sequence
// drafts on a KV sequence of its own in it (engine/draft_model), and the sequences that draft
// in one step do so together, one decode per draft position for all of them. A small draft's
// step is mostly fixed cost (graph, threads, the output layer's weights read once), so four
// sequences drafting one after another cost nearly four times what they cost together.
#include "engine/context_memory.h"
#include "engine/cpu_threads.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <memory>
#include <string>

namespace specd::engine {

class DraftContext {
  public:
    // `n_ctx` tokens per sequence, `n_seq` sequences, batches of up to `n_batch` tokens.
    // Throws specd::Error(bad_request) when the draft's vocabulary differs from the target's.
    DraftContext(std::shared_ptr<Model> draft, const Model & target, uint32_t n_ctx, int n_seq, int32_t n_batch);

    llama_context *      get() const { return ctx_.get(); }
    Batch &              batch() { return batch_; }
    const Model &        model() const { return *model_; }
    const ContextBytes & memory() const { return memory_; }
    // What the draft decodes at an image's positions: it has no projector, so the text after
    // an image keeps its positions (and the draft its context).
    llama_token          filler() const { return filler_; }

    // The pools must outlive this context.
    void use_threads(ThreadPools & pools, const ThreadChoice & choice);

    // Decodes the batch; false when llama.cpp refused it. decodes() counts the calls (the
    // drafting's cost in steps, for tests and statistics).
    bool    decode();
    int64_t decodes() const { return decodes_; }

  private:
    std::shared_ptr<Model> model_;
    context_ptr            ctx_;
    ContextBytes           memory_;
    Batch                  batch_;
    llama_token            filler_  = 0;
    int64_t                decodes_ = 0;
};

// Empty when two vocabularies are interchangeable for speculation, else the reason.
std::string vocab_mismatch(const Model & target, const Model & draft);

} // namespace specd::engine
