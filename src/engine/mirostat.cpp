#include "engine/mirostat.h"

#include <algorithm>
#include <cmath>

namespace specd::engine {

namespace {

// Version 1 estimates the Zipf exponent from this many of the most probable tokens (the
// paper's m, llama.cpp's and Ollama's value).
constexpr int k_zipf_tokens = 100;

void sort_by_logit(llama_token_data_array & arr) {
    std::sort(arr.data, arr.data + arr.size,
              [](const llama_token_data & a, const llama_token_data & b) { return a.logit > b.logit; });
    arr.sorted = true;
}

// Probabilities of the first arr.size candidates, normalised over them.
void softmax(llama_token_data_array & arr) {
    if (arr.size == 0) return;
    const float max_logit = arr.data[0].logit; // sorted
    double      z         = 0.0;
    for (size_t i = 0; i < arr.size; ++i) {
        arr.data[i].p = std::isinf(arr.data[i].logit) ? 0.0f : std::exp(arr.data[i].logit - max_logit);
        z += arr.data[i].p;
    }
    for (size_t i = 0; i < arr.size; ++i) arr.data[i].p = float(arr.data[i].p / z);
}

} // namespace

Mirostat::Mirostat(int version, float tau, float eta, int32_t n_vocab) :
    version_(version == 1 ? 1 : 2), tau_(tau), eta_(eta), n_vocab_(std::max(n_vocab, 2)), mu_(2.0f * tau) {}

void Mirostat::apply(llama_token_data_array & arr) const {
    if (arr.size == 0) return;
    sort_by_logit(arr);
    softmax(arr);
    size_t keep = arr.size;
    if (version_ == 1) {
        // Least squares through the origin of log(p_i / p_{i+1}) on log((i + 2) / (i + 1)):
        // the slope is the exponent s of a Zipf law p_i ~ i^-s.
        double sum_tb = 0.0, sum_tt = 0.0;
        for (size_t i = 0; i + 1 < std::min(arr.size, size_t(k_zipf_tokens)); ++i) {
            if (!(arr.data[i + 1].p > 0.0f)) break;
            const double t = std::log(double(i + 2) / double(i + 1));
            sum_tb += t * std::log(double(arr.data[i].p) / double(arr.data[i + 1].p));
            sum_tt += t * t;
        }
        const double s_hat = sum_tt > 0.0 ? sum_tb / sum_tt : 1.0;
        const double eps   = s_hat - 1.0;
        // The k whose expected surprise under that law is mu (the paper's eq. 2).
        double k = std::abs(eps) < 1e-9
                       ? double(arr.size)
                       : std::pow(eps * std::pow(2.0, double(mu_)) / (1.0 - std::pow(double(n_vocab_), -eps)), 1.0 / s_hat);
        if (!std::isfinite(k)) k = double(arr.size);
        keep = size_t(std::clamp(k, 1.0, double(arr.size)));
    } else {
        // Every candidate whose surprise is above mu goes; the most probable always stays.
        keep = 1;
        while (keep < arr.size && !(-std::log2(arr.data[keep].p) > mu_)) ++keep;
    }
    arr.size = keep;
    softmax(arr);
}

void Mirostat::accept(float p) {
    const float surprise = -std::log2(std::max(p, 1e-30f));
    mu_ -= eta_ * (surprise - tau_);
}

} // namespace specd::engine
