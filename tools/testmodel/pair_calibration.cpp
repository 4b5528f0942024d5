#include "pair_calibration.h"

#include <llama-cpp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace {

// llama_batch owns malloc'd arrays; this frees them on every path out.
class batch_owner {
public:
    explicit batch_owner(int32_t n_tokens) : batch_(llama_batch_init(n_tokens, 0, 1)) {}
    ~batch_owner() { llama_batch_free(batch_); }
    batch_owner(const batch_owner &) = delete;
    batch_owner & operator=(const batch_owner &) = delete;
    llama_batch & get() { return batch_; }

private:
    llama_batch batch_;
};

} // namespace

std::vector<llama_token> greedy_choices(const std::string & model_path, const std::vector<llama_token> & tokens) {
    llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = 0;
    llama_model_ptr model(llama_model_load_from_file(model_path.c_str(), mparams));
    if (!model) {
        throw std::runtime_error("libllama cannot load " + model_path);
    }

    const auto n_tokens = int32_t(tokens.size());
    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx     = uint32_t(n_tokens);
    cparams.n_batch   = uint32_t(n_tokens);
    cparams.n_ubatch  = uint32_t(n_tokens);
    cparams.n_seq_max = 1;
    cparams.n_threads = cparams.n_threads_batch = int32_t(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
    cparams.no_perf   = true;
    llama_context_ptr ctx(llama_init_from_model(model.get(), cparams));
    if (!ctx) {
        throw std::runtime_error("libllama cannot create a context for " + model_path);
    }

    batch_owner batch(n_tokens);
    llama_batch & b = batch.get();
    for (int32_t i = 0; i < n_tokens; ++i) {
        b.token[i]     = tokens[size_t(i)];
        b.pos[i]       = i;
        b.n_seq_id[i]  = 1;
        b.seq_id[i][0] = 0;
        b.logits[i]    = true;
    }
    b.n_tokens = n_tokens;
    if (llama_decode(ctx.get(), b) != 0) {
        throw std::runtime_error("llama_decode failed on " + model_path);
    }

    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model.get()));
    std::vector<llama_token> choices(size_t(n_tokens), 0);
    for (int32_t i = 0; i < n_tokens; ++i) {
        const float * logits = llama_get_logits_ith(ctx.get(), i); // (n_vocab)
        choices[size_t(i)] = llama_token(std::max_element(logits, logits + n_vocab) - logits);
    }
    return choices;
}

agreement_probe::agreement_probe(const std::string & reference_path, std::vector<llama_token> tokens)
    : tokens_(std::move(tokens)), reference_choices_(greedy_choices(reference_path, tokens_)) {}

double agreement_probe::measure(const std::string & path) const {
    const std::vector<llama_token> choices = greedy_choices(path, tokens_);
    size_t same = 0;
    for (size_t i = 0; i < choices.size(); ++i) {
        same += choices[i] == reference_choices_[i];
    }
    return double(same) / double(choices.size());
}

pair_calibration_result pair_calibrate(const agreement_probe & probe, double want,
                                       const std::function<std::string(double)> & write_target) {
    // Agreement is counted in steps of 1/n_positions; closer than one step is noise.
    const double tolerance = 1.0 / double(probe.n_positions());
    const int    max_evals = 24;
    const double max_alpha = 1024.0;

    pair_calibration_result best;
    pair_calibration_result last;
    const auto eval = [&](double alpha) {
        last = {alpha, probe.measure(write_target(alpha)), ++best.n_evals};
        if (std::abs(last.agreement - want) < std::abs(best.agreement - want)) {
            best.residual_scale = last.residual_scale;
            best.agreement      = last.agreement;
        }
        return last.agreement;
    };

    if (want < 1.0) {
        // Bracket: agreement(lo) >= want > agreement(hi). alpha 0 makes the target compute
        // exactly the draft (its extra layers add 0), so lo = 0 needs no measurement.
        double lo = 0.0;
        double hi = 0.25;
        while (eval(hi) > want && hi < max_alpha && best.n_evals < max_evals) {
            lo = hi;
            hi *= 4.0;
        }
        while (std::abs(best.agreement - want) > tolerance && best.n_evals < max_evals) {
            const double mid = 0.5 * (lo + hi);
            (eval(mid) > want ? lo : hi) = mid;
        }
    }

    if (best.n_evals == 0 || last.residual_scale != best.residual_scale) {
        best.agreement = probe.measure(write_target(best.residual_scale));
        best.n_evals++;
    }
    return best;
}
