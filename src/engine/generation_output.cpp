#include "engine/generation_output.h"

#include "engine/logprobs.h"
#include "grammar/json_schema.h"

#include <climits>

namespace specd::engine {

GenerationOutput::GenerationOutput(const Model & model, const GenerateOptions & opts, const TextSink & emit,
                                   const LogprobSink & emit_logprobs) :
    model_(model), opts_(opts), emit_(emit), emit_logprobs_(emit_logprobs), stops_(opts.stop) {}

bool GenerationOutput::commit(llama_token token, llama_context * ctx, int32_t idx) {
    if (model_.is_eog(token)) return end(DoneReason::stop);
    ++eval_count_;
    tokens_.push_back(token);
    if (opts_.logprobs >= 0) pending_.push_back(logprob_at(ctx, idx, token));
    const auto r = stops_.push(utf8_.push(model_.token_piece(token)));
    if (!r.text.empty()) emit(r.text);
    if (r.stopped) {
        stopped_ = true;
        return end(DoneReason::stop);
    }
    if (opts_.end_on_complete_json) {
        answer_ += r.text;
        if (grammar::is_complete_json(answer_)) return end(DoneReason::stop);
    }
    if (opts_.num_predict > 0 && eval_count_ >= opts_.num_predict) return end(DoneReason::length);
    return false;
}

int GenerationOutput::remaining() const {
    return opts_.num_predict > 0 ? opts_.num_predict - eval_count_ : INT_MAX;
}

void GenerationOutput::finish() {
    if (stopped_) return;
    const auto  r    = stops_.push(utf8_.flush());
    std::string tail = r.text + (r.stopped ? "" : stops_.flush());
    if (!tail.empty() || (!r.stopped && !pending_.empty())) emit(tail);
}

void GenerationOutput::emit(const std::string & text) {
    if (!pending_.empty() && emit_logprobs_) emit_logprobs_(std::move(pending_));
    pending_.clear();
    if (emit_) emit_(text);
}

// Log-softmax of the target's raw logits at `idx` (before penalties, grammar, temperature).
TokenLogprob GenerationOutput::logprob_at(llama_context * ctx, int32_t idx, llama_token token) const {
    const float *          logits  = llama_get_logits_ith(ctx, idx);
    const size_t           n_vocab = size_t(llama_vocab_n_tokens(model_.vocab()));
    const PositionLogprobs p       = position_logprobs({logits, n_vocab}, token, opts_.logprobs);
    TokenLogprob           out{model_.token_piece(token), p.chosen, {}};
    for (const auto & [id, lp] : p.top) out.top.push_back({model_.token_piece(id), lp});
    return out;
}

} // namespace specd::engine
