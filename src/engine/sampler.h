#pragma once
// Token selection for one request: an optional grammar constraint, then the sampling chain
// (penalties, top-k, typical, top-p, min-p, temperature, draw), Ollama's order and options.
#include "core/options.h"
#include "engine/llama_handles.h"

#include <span>
#include <string>
#include <vector>

namespace specd::engine {

class Sampler {
  public:
    // `grammar` is GBNF (empty: none). Throws specd::Error(bad_request) if it does not parse.
    Sampler(const llama_vocab * vocab, const SamplingOptions & opts, const std::string & grammar);

    // Feeds context tokens to the penalties only (the grammar constrains output, not input).
    void accept_history(std::span<const llama_token> tokens);

    // Picks the next token from the logits at batch index `idx` and records it.
    llama_token sample(llama_context * ctx, int32_t idx);

    bool constrained() const { return grammar_ != nullptr; }

  private:
    const llama_vocab *            vocab_;
    sampler_ptr                    grammar_;
    sampler_ptr                    chain_;
    std::vector<llama_token_data>  cur_; // (n_vocab) candidates, reused between calls
};

} // namespace specd::engine
