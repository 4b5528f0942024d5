#pragma once
// Mirostat sampling (Basu et al. 2020, as llama.cpp and Ollama implement it): instead of a
// fixed top-k or top-p, the candidate set is cut so that the surprise of the sampled tokens
// stays near a target `tau` (bits per token), steering a running threshold `mu` by `eta`
// after every token. Version 1 estimates the distribution's Zipf exponent from its top 100
// tokens and cuts to a top-k; version 2 cuts every token whose surprise exceeds mu.
//
// Speculation needs the target's distribution at every verified position before it is
// sampled: apply() cuts a position's candidates with the current mu, and accept() moves mu
// by the surprise of the token that position took (called in order, once per kept token, as
// the grammar's accept is), so a verified draft sees exactly the mu a plain decode would.
#include <llama.h>

#include <cstdint>

namespace specd::engine {

class Mirostat {
  public:
    // version 1 or 2; `n_vocab` matters to version 1's estimate.
    Mirostat(int version, float tau, float eta, int32_t n_vocab);

    // Sorts `arr` by logit (already divided by the temperature), cuts it with the current mu
    // and leaves each kept candidate's probability in .p (normalised over the kept ones).
    void apply(llama_token_data_array & arr) const;
    // The position just sampled took a token of probability `p` in apply()'s cut.
    void accept(float p);

    float mu() const { return mu_; }

  private:
    int     version_;
    float   tau_;
    float   eta_;
    int32_t n_vocab_;
    float   mu_;
};

} // namespace specd::engine
