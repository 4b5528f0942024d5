#pragma once

#include <llama.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// Measures how often two models make the same greedy choice, by running libllama itself:
// each model is teacher-forced over the same token sequence in one batch and its argmax is
// taken after every position. This is the per-token acceptance a greedy drafter would see.
class agreement_probe {
public:
    // Loads the reference (the draft) once; its choices are compared with every candidate.
    agreement_probe(const std::string & reference_path, std::vector<llama_token> tokens);

    // Fraction of positions where the model at `path` chooses what the reference chooses.
    double measure(const std::string & path) const;

    size_t n_positions() const { return tokens_.size(); }

private:
    std::vector<llama_token> tokens_;
    std::vector<llama_token> reference_choices_;
};

// Greedy choice after every position of `tokens`, teacher-forced; throws on load/decode errors.
std::vector<llama_token> greedy_choices(const std::string & model_path, const std::vector<llama_token> & tokens);

struct pair_calibration_result {
    double residual_scale = 0.0; // alpha: the scale of the target's extra layers
    double agreement      = 1.0; // measured at residual_scale
    int    n_evals        = 0;
};

// Finds alpha whose measured agreement is closest to `want` by bracketing and bisection
// (agreement falls from 1 at alpha 0 towards chance as alpha grows). write_target(alpha)
// writes the target for alpha and returns its path; on return the target on disk is the one
// for the returned alpha.
pair_calibration_result pair_calibrate(const agreement_probe & probe, double want,
                                       const std::function<std::string(double)> & write_target);
