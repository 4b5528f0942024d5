#include "engine/sampler.h"

#include "core/error.h"

#include <random>

namespace specd::engine {

Sampler::Sampler(const llama_vocab * vocab, const SamplingOptions & o, const std::string & grammar) :
    vocab_(vocab) {
    if (!grammar.empty()) {
        grammar_.reset(llama_sampler_init_grammar(vocab, grammar.c_str(), "root"));
        if (!grammar_) throw bad_request("invalid grammar for format");
    }
    chain_.reset(llama_sampler_chain_init(llama_sampler_chain_default_params()));
    auto * c = chain_.get();
    const bool penalize = o.repeat_last_n != 0 && (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f ||
                                                    o.presence_penalty != 0.0f);
    if (penalize) {
        llama_sampler_chain_add(c, llama_sampler_init_penalties(llama_vocab_n_tokens(vocab), o.repeat_last_n,
                                                                o.repeat_penalty, o.frequency_penalty,
                                                                o.presence_penalty));
    }
    if (o.temperature <= 0.0f) {
        llama_sampler_chain_add(c, llama_sampler_init_greedy());
        return;
    }
    const uint32_t seed = o.seed < 0 ? std::random_device{}() : static_cast<uint32_t>(o.seed);
    if (o.top_k > 0) llama_sampler_chain_add(c, llama_sampler_init_top_k(o.top_k));
    if (o.typical_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_typical(o.typical_p, 1));
    if (o.top_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_top_p(o.top_p, 1));
    if (o.min_p > 0.0f) llama_sampler_chain_add(c, llama_sampler_init_min_p(o.min_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(o.temperature));
    llama_sampler_chain_add(c, llama_sampler_init_dist(seed));
}

void Sampler::accept_history(std::span<const llama_token> tokens) {
    for (llama_token t : tokens) llama_sampler_accept(chain_.get(), t);
}

llama_token Sampler::sample(llama_context * ctx, int32_t idx) {
    const float * logits  = llama_get_logits_ith(ctx, idx);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab_);
    cur_.resize(n_vocab);
    for (llama_token t = 0; t < n_vocab; ++t) cur_[t] = llama_token_data{t, logits[t], 0.0f};
    llama_token_data_array arr{cur_.data(), cur_.size(), -1, false};

    // The grammar masks illegal tokens to -inf before anything else sees them, so the draw
    // can only pick a legal token and end-of-generation only where the grammar is complete.
    if (grammar_) llama_sampler_apply(grammar_.get(), &arr);
    llama_sampler_apply(chain_.get(), &arr);
    if (arr.selected < 0 || arr.selected >= static_cast<int64_t>(arr.size)) {
        throw Error(ErrorKind::internal, "sampler selected no token");
    }
    const llama_token token = arr.data[arr.selected].id;
    if (grammar_) llama_sampler_accept(grammar_.get(), token);
    llama_sampler_accept(chain_.get(), token);
    return token;
}

} // namespace specd::engine
