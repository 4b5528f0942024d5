#pragma once
// One llama context on a loaded model and the generation loop that runs on it. The tokens
// held in its KV cache are remembered, so a request that shares a prefix with the previous
// one (a chat that goes on) only evaluates the new part.
#include "core/options.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace specd::engine {

struct GenerateStats {
    int32_t prompt_eval_count = 0; // prompt tokens evaluated (not counting reused ones)
    int64_t prompt_eval_ns    = 0;
    int32_t eval_count        = 0; // tokens generated
    int64_t eval_ns           = 0;
};

struct GenerateResult {
    DoneReason               reason = DoneReason::stop;
    GenerateStats            stats;
    std::vector<llama_token> context; // prompt + generated tokens, Ollama's `context`
};

using TextSink = std::function<void(std::string_view text)>;

class Session {
  public:
    // Throws specd::Error(bad_request) when the context cannot be created.
    Session(std::shared_ptr<Model> model, const ContextOptions & opts);

    // Runs one generation. `emit` receives valid UTF-8 text pieces, never a stop string.
    // Throws specd::Error(cancelled) soon after `cancel` becomes true, wherever it is.
    GenerateResult generate(std::vector<llama_token> prompt, const GenerateOptions & opts,
                            const TextSink & emit, const std::atomic<bool> & cancel);

    const Model &          model() const { return *model_; }
    const ContextOptions & options() const { return opts_; }
    // The context length asked for (clamped to the trained one). llama.cpp may allocate a
    // little more (it pads), but limits apply to this number, as the client set it.
    uint32_t               n_ctx() const { return n_ctx_; }

  private:
    // Makes the KV cache hold `prompt` (reusing the common prefix); leaves the logits of the
    // last prompt token at batch index returned.
    int32_t prefill(const std::vector<llama_token> & prompt, const std::atomic<bool> & cancel,
                    GenerateStats & stats);
    void    decode_or_throw(const std::atomic<bool> & cancel);
    void    shift_context(int32_t n_keep);

    std::shared_ptr<Model>   model_;
    ContextOptions           opts_;
    uint32_t                 n_ctx_ = 0;
    context_ptr              ctx_;
    Batch                    batch_;
    std::vector<llama_token> cached_; // tokens whose KV is in sequence 0, in order
    const std::atomic<bool> * cancel_ = nullptr; // read by llama.cpp's abort callback
};

// The Ollama truncation rule: keep the first `num_keep` tokens, drop the oldest of the rest
// so that the prompt leaves room for at least one generated token.
std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep);

} // namespace specd::engine
