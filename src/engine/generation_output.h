#pragma once
// The per-request side of a generation: turns chosen tokens into text, and knows when the
// answer ends (end of generation, a stop string, num_predict, a complete JSON value).
// With logprobs, a token's log-probability goes out with the first text emitted at or after
// it; tokens whose text a stop string removed entirely are not reported.
#include "core/logprobs.h"
#include "core/options.h"
#include "core/utf8.h"
#include "engine/model.h"
#include "engine/stop_matcher.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

using TextSink = std::function<void(std::string_view text)>;
// With GenerateOptions::logprobs: the tokens whose text the next TextSink call completes,
// called just before it.
using LogprobSink = std::function<void(std::vector<TokenLogprob> logprobs)>;

class GenerationOutput {
  public:
    // `opts`, `emit` and `emit_logprobs` must outlive this object.
    GenerationOutput(const Model & model, const GenerateOptions & opts, const TextSink & emit,
                     const LogprobSink & emit_logprobs);

    // Records one token of the answer whose distribution is at batch index `idx` of `ctx`;
    // true when the answer has ended.
    bool commit(llama_token token, llama_context * ctx, int32_t idx);

    bool end(DoneReason reason) {
        reason_ = reason;
        return true;
    }

    // Tokens the answer may still take (INT_MAX when unbounded).
    int remaining() const;

    // Releases text held back for a possible stop string or an unfinished UTF-8 sequence.
    void finish();

    DoneReason                       reason() const { return reason_; }
    int32_t                          eval_count() const { return eval_count_; }
    const std::vector<llama_token> & tokens() const { return tokens_; }

  private:
    void         emit(const std::string & text);
    TokenLogprob logprob_at(llama_context * ctx, int32_t idx, llama_token token) const;

    const Model &             model_;
    const GenerateOptions &   opts_;
    const TextSink &          emit_;
    const LogprobSink &       emit_logprobs_;
    std::vector<TokenLogprob> pending_; // committed tokens whose text has not gone out yet
    std::vector<llama_token>  tokens_;  // the answer's tokens, end-of-generation excluded
    int32_t                   eval_count_ = 0;
    DoneReason                reason_     = DoneReason::stop;
    Utf8Stream                utf8_;
    StopMatcher               stops_;
    bool                      stopped_ = false;
    std::string               answer_; // the text so far, kept only when end_on_complete_json needs it
};

} // namespace specd::engine
