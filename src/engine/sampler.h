#pragma once
// Token selection for one request: the grammar mask first, then the sampling chain
// (penalties, top-k, typical, top-p, min-p, temperature) in Ollama's order, or with
// `mirostat` 1 or 2 the penalties, the temperature and mirostat's cut (engine/mirostat.h). The result is a
// distribution rather than a token, so speculative verification can compare it with a
// draft's; drawing from it uses the request's own seeded generator.
#include "core/options.h"
#include "engine/grammar_constraint.h"
#include "engine/llama_handles.h"
#include "engine/mirostat.h"
#include "engine/model.h"
#include "spec/token_dist.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace specd::engine {

class Sampler {
  public:
    // `grammar` is GBNF (empty: none). Throws specd::Error(bad_request) if it does not parse,
    // or when a logit_bias names a token outside the vocabulary.
    // `penalties`: false for a draft model's sampler (its proposals need no history, and
    // no mirostat either: any draft distribution is exact under verification).
    Sampler(const Model & model, const SamplingOptions & opts, const std::string & grammar, bool penalties = true);

    // Feeds context tokens to the penalties only (the grammar constrains output, not input).
    void accept_history(std::span<const llama_token> tokens);

    // The distribution at batch index `idx`; a point mass on the best token when greedy.
    spec::TokenDist distribution(llama_context * ctx, int32_t idx);

    // Records a chosen token: advances the grammar, the penalties' history and mirostat's mu
    // (by the token's probability in the last distribution()).
    void accept(llama_token token);

    // How many of `tokens`, in order from the current state, the grammar allows (all of them
    // without a grammar). Does not advance.
    size_t legal_prefix(std::span<const llama_token> tokens) const;

    bool greedy() const { return greedy_; }
    // Time spent in the grammar by this sampler so far (checks, masks, accepts).
    int64_t grammar_ns() const { return grammar_ns_; }
    // The grammar's current state; null when unconstrained.
    const GrammarConstraint * constraint() const { return constraint_.get(); }
    // Replaces the grammar (a draft model samples under a copy of the target's state).
    void set_constraint(std::unique_ptr<GrammarConstraint> c) { constraint_ = std::move(c); }

  private:
    const llama_vocab *                  vocab_;
    bool                                 greedy_;
    std::unique_ptr<GrammarConstraint> constraint_;
    sampler_ptr                          penalties_; // null: no penalties
    sampler_ptr                          chain_;     // top-k ... temperature; null when greedy
    int32_t                              top_k_ = 0;
    float                                temperature_ = 1.0f;
    std::vector<std::pair<llama_token, float>> bias_; // logit_bias, checked against the vocabulary
    std::optional<Mirostat>              mirostat_;
    spec::TokenDist                      last_; // with mirostat: the last distribution, for accept()
    int64_t                              grammar_ns_ = 0;
    std::vector<llama_token_data> cur_; // (n_vocab) candidates, reused between calls
};

} // namespace specd::engine
