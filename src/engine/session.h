#pragma once
// One llama context on a loaded model (plus, optionally, a draft model's) and the decode
// rounds that run on it. The tokens held in its KV cache are remembered, so a request that
// shares a prefix with the previous one (a chat that goes on) only evaluates the new part.
#include "cache/prompt_cache.h"
#include "core/logprobs.h"
#include "core/options.h"
#include "engine/context_memory.h"
#include "engine/draft_model.h"
#include "engine/forced_speller.h"
#include "engine/llama_handles.h"
#include "engine/model.h"
#include "engine/projector.h"
#include "grammar/constraint.h"
#include "spec/depth_controller.h"
#include "spec/ngram_drafter.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

struct GenerateResult {
    DoneReason               reason = DoneReason::stop;
    GenerateStats            stats;
    spec::DepthStats         speculation;
    GrammarDraftStats        grammar_drafts;
    std::vector<int64_t>     k_histogram; // [k]: rounds that drafted k tokens
    std::vector<llama_token> context; // prompt + generated tokens, Ollama's `context`
};

using TextSink = std::function<void(std::string_view text)>;
// With GenerateOptions::logprobs: the tokens whose text the next TextSink call completes,
// called just before it.
using LogprobSink = std::function<void(std::vector<TokenLogprob> logprobs)>;

// Where a session keeps sequence states it would otherwise lose, and under which name: the
// namespace must differ for any two model pairs whose states are not interchangeable.
struct PromptCacheLink {
    cache::PromptCache * cache = nullptr; // null: no prompt cache
    std::string          ns;
};

// The memory a session's contexts hold besides the weights.
struct SessionMemory {
    ContextBytes target;
    ContextBytes draft;
};

class Session {
  public:
    // Throws specd::Error(bad_request) when a context cannot be created or the draft's
    // vocabulary does not match.
    Session(std::shared_ptr<Model> model, const ContextOptions & opts, std::shared_ptr<Model> draft = nullptr,
            PromptCacheLink cache = {});

    // Runs one generation. `emit` receives valid UTF-8 text pieces, never a stop string.
    // Throws specd::Error(cancelled) soon after `cancel` becomes true, wherever it is.
    GenerateResult generate(std::vector<llama_token> prompt, const GenerateOptions & opts,
                            const TextSink & emit, const std::atomic<bool> & cancel,
                            const LogprobSink & emit_logprobs = {});
    // A prompt with images (`prompt.projector` evaluates them). Image positions are never
    // truncated away: a prompt with images longer than the context is a bad_request.
    GenerateResult generate(MultimodalPrompt prompt, const GenerateOptions & opts, const TextSink & emit,
                            const std::atomic<bool> & cancel, const LogprobSink & emit_logprobs = {});

    // The most tokens one batch (and micro-batch) of this context holds.
    int32_t batch_capacity() const { return batch_.capacity(); }

    const Model &          model() const { return *model_; }
    const ContextOptions & options() const { return opts_; }
    bool                   has_draft_model() const { return draft_ != nullptr; }
    // The context length asked for (clamped to the trained one). llama.cpp may allocate a
    // little more (it pads), but limits apply to this number, as the client set it.
    uint32_t               n_ctx() const { return n_ctx_; }
    int32_t                n_threads() const { return llama_n_threads(ctx_.get()); }

    // What the depth controller carries from one request to the next on this model.
    const spec::DepthPrior & depth_prior() const { return prior_; }

    const SessionMemory & memory() const { return memory_; }

    // Saves the live sequence into the prompt cache, if it is worth keeping: called before
    // the session is closed (the model unloads, or the next request needs other options).
    void park();

  private:
    class Generation;

    // Makes the KV cache hold `prompt` (reusing the common prefix); leaves the logits of the
    // last prompt token at the batch index returned.
    int32_t prefill(const MultimodalPrompt & prompt, const std::atomic<bool> & cancel, GenerateStats & stats);
    Projector::EvalTimes eval_image(const MultimodalPrompt & prompt, const ImageSpan & image,
                                    const std::atomic<bool> & cancel);
    // With the live KV holding the prompt's first `live` tokens: restores a saved state that
    // holds more of it, if there is one (saving the live one first). Returns how many prompt
    // tokens the KV now holds, from the start.
    size_t reuse_saved(const MultimodalPrompt & prompt, size_t live);
    // Saves the live sequence when more than a little of it is about to be lost: everything
    // after its first `keep` tokens.
    void   save_live(size_t keep);
    bool   restore(const cache::CacheEntry & entry, size_t n_tokens);
    void    decode_or_throw(const std::atomic<bool> & cancel);
    // The text `state` forces after `prev`, and its tokens (at most `max_tokens`) as the
    // target is likely to spell it. Empty where the grammar forces nothing.
    struct Forced {
        std::string              text;
        std::vector<llama_token> tokens;
    };
    Forced forced_tokens(const grammar::Constraint & state, llama_token prev, int max_tokens);
    void    shift_context(int32_t n_keep);

    std::shared_ptr<Model>      model_;
    ContextOptions              opts_;
    uint32_t                    n_ctx_ = 0;
    context_ptr                 ctx_;
    Batch                       batch_;
    std::vector<llama_token>    cached_; // tokens whose KV is in sequence 0, in order
    std::unique_ptr<DraftModel> draft_;
    spec::NgramDrafter          ngram_;
    spec::FirstOfDrafters       drafters_; // prompt lookup first (free), then the draft model
    spec::DepthPrior            prior_;
    ForcedSpeller               speller_; // learns how the target spells forced text
    PromptCacheLink             cache_;
    SessionMemory               memory_;
    const std::atomic<bool> *   cancel_ = nullptr; // read by llama.cpp's abort callback
};

// The Ollama truncation rule: keep the first `num_keep` tokens, drop the oldest of the rest
// so that the prompt leaves room for at least one generated token.
std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep);

} // namespace specd::engine
