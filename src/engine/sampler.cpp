#include "engine/sampler.h"

#include "core/error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace specd::engine {

namespace {

// Adds the lifetime of the scope to a nanosecond counter.
class ScopedTimer {
  public:
    explicit ScopedTimer(int64_t & total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
    ~ScopedTimer() {
        total_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
    }
    ScopedTimer(const ScopedTimer &)             = delete;
    ScopedTimer & operator=(const ScopedTimer &) = delete;

  private:
    int64_t &                             total_;
    std::chrono::steady_clock::time_point t0_;
};

} // namespace

Sampler::Sampler(const Model & model, const SamplingOptions & o, const std::string & grammar, bool penalties) :
    vocab_(model.vocab()), greedy_(o.temperature <= 0.0f) {
    if (!grammar.empty()) constraint_ = std::make_unique<GrammarConstraint>(model.vocab_index(), grammar);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab_);
    for (const auto & [token, bias] : o.logit_bias) {
        if (token < 0 || token >= n_vocab) {
            throw Error(ErrorKind::bad_request, "logit_bias: token " + std::to_string(token) +
                                                    " is not in the model's vocabulary (0 to " + std::to_string(n_vocab - 1) + ")");
        }
        if (bias != 0.0f) bias_.emplace_back(token, bias);
    }
    const bool penalize = penalties && o.repeat_last_n != 0 &&
                          (o.repeat_penalty != 1.0f || o.frequency_penalty != 0.0f || o.presence_penalty != 0.0f);
    if (penalize) {
        penalties_.reset(llama_sampler_init_penalties(llama_vocab_n_tokens(vocab_), o.repeat_last_n, o.repeat_penalty,
                                                      o.frequency_penalty, o.presence_penalty));
    }
    if (greedy_) return;
    temperature_ = o.temperature;
    if (penalties && (o.mirostat == 1 || o.mirostat == 2)) {
        // As llama.cpp and Ollama: mirostat replaces top-k, typical, top-p and min-p.
        mirostat_.emplace(o.mirostat, o.mirostat_tau, o.mirostat_eta, n_vocab);
        return;
    }
    top_k_ = std::max(0, o.top_k);
    chain_.reset(llama_sampler_chain_init(llama_sampler_chain_default_params()));
    auto * c = chain_.get();
    if (o.top_k > 0) llama_sampler_chain_add(c, llama_sampler_init_top_k(o.top_k));
    if (o.typical_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_typical(o.typical_p, 1));
    if (o.top_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_top_p(o.top_p, 1));
    if (o.min_p > 0.0f) llama_sampler_chain_add(c, llama_sampler_init_min_p(o.min_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(o.temperature));
}

void Sampler::accept_history(std::span<const llama_token> tokens) {
    if (!penalties_) return;
    for (llama_token t : tokens) llama_sampler_accept(penalties_.get(), t);
}

spec::TokenDist Sampler::distribution(llama_context * ctx, int32_t idx) {
    const float * logits  = llama_get_logits_ith(ctx, idx);
    const int32_t n_vocab = llama_vocab_n_tokens(vocab_);
    if (greedy_ && !penalties_ && !constraint_ && bias_.empty()) {
        // The argmax of the raw logits, without copying them into candidates: this runs for
        // every verified and every drafted position.
        const float * best = std::max_element(logits, logits + n_vocab);
        if (std::isinf(*best)) throw Error(ErrorKind::internal, "no token is possible");
        return spec::TokenDist::point(static_cast<llama_token>(best - logits));
    }
    cur_.resize(n_vocab);
    for (llama_token t = 0; t < n_vocab; ++t) cur_[t] = llama_token_data{t, logits[t], 0.0f};
    for (const auto & [token, bias] : bias_) cur_[size_t(token)].logit += bias;
    llama_token_data_array arr{cur_.data(), cur_.size(), -1, false};

    const auto argmax = [&] {
        size_t best = 0;
        for (size_t i = 1; i < arr.size; ++i) {
            if (arr.data[i].logit > arr.data[best].logit) best = i;
        }
        if (arr.size == 0 || std::isinf(arr.data[best].logit)) throw Error(ErrorKind::internal, "no token is possible");
        return arr.data[best].id;
    };

    if (greedy_) {
        // Masking only lowers illegal tokens to -inf, so when the unmasked best token is
        // legal it is also the best legal one: one single-token check (microseconds)
        // instead of a full-vocabulary mask (milliseconds, FACTS.md) at most positions.
        if (penalties_) llama_sampler_apply(penalties_.get(), &arr);
        const llama_token best = argmax();
        if (!constraint_) return spec::TokenDist::point(best);
        ScopedTimer timer(grammar_ns_);
        if (constraint_->allows(best)) return spec::TokenDist::point(best);
        return spec::TokenDist::point(constraint_->best_legal(arr));
    }

    // The grammar removes illegal tokens before top-k and the rest see them, so only a legal
    // token can be drawn and end-of-generation only where the grammar is complete. With a
    // top-k only the k best legal tokens matter, and finding them rarely needs a full mask.
    if (penalties_) llama_sampler_apply(penalties_.get(), &arr);
    if (constraint_) {
        ScopedTimer timer(grammar_ns_);
        if (top_k_ > 0) constraint_->legal_top(arr, static_cast<size_t>(top_k_));
        else constraint_->apply(arr);
    }
    if (mirostat_) {
        for (size_t i = 0; i < arr.size; ++i) arr.data[i].logit /= temperature_;
        mirostat_->apply(arr);
        if (arr.size == 0 || std::isinf(arr.data[0].logit)) throw Error(ErrorKind::internal, "no token is possible");
        last_ = {};
        for (size_t i = 0; i < arr.size; ++i) {
            if (arr.data[i].p <= 0.0f) continue;
            last_.ids.push_back(arr.data[i].id);
            last_.probs.push_back(arr.data[i].p);
        }
        return last_;
    }
    llama_sampler_apply(chain_.get(), &arr);

    spec::TokenDist d;
    float max_logit = -INFINITY;
    for (size_t i = 0; i < arr.size; ++i) max_logit = std::max(max_logit, arr.data[i].logit);
    if (std::isinf(max_logit)) throw Error(ErrorKind::internal, "no token is possible");
    double z = 0.0;
    for (size_t i = 0; i < arr.size; ++i) {
        if (std::isinf(arr.data[i].logit)) continue;
        const float e = std::exp(arr.data[i].logit - max_logit);
        d.ids.push_back(arr.data[i].id);
        d.probs.push_back(e);
        z += e;
    }
    for (auto & p : d.probs) p = static_cast<float>(p / z);
    return d;
}

size_t Sampler::legal_prefix(std::span<const llama_token> tokens) const {
    return constraint_ ? constraint_->legal_prefix(tokens) : tokens.size();
}

void Sampler::accept(llama_token token) {
    if (constraint_) {
        ScopedTimer timer(grammar_ns_);
        constraint_->accept(token);
    }
    if (penalties_) llama_sampler_accept(penalties_.get(), token);
    if (mirostat_) mirostat_->accept(last_.prob_of(token));
}

} // namespace specd::engine
