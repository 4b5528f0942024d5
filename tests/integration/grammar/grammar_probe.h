#pragma once
// Asks llama.cpp's own grammar sampler whether it accepts a text: the text is fed one byte
// at a time as the vocabulary's byte-fallback tokens (<0x00>..<0xFF> in an SPM vocabulary),
// each checked with a one-candidate apply before it is accepted (accepting an illegal token
// aborts), and the end is legal when EOS is. Tokenizing the whole text instead would let
// the tokenizer add a leading space.
#include "engine/llama_handles.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

namespace specd::grammar_test {

class GrammarProbe {
  public:
    explicit GrammarProbe(const llama_vocab * vocab) : vocab_(vocab), eos_(llama_vocab_eos(vocab)) {
        byte_token_.fill(-1);
        for (llama_token t = 0; t < llama_vocab_n_tokens(vocab); ++t) {
            const std::string text = llama_vocab_get_text(vocab, t);
            unsigned          b    = 0;
            if (text.size() == 6 && std::sscanf(text.c_str(), "<0x%2X>", &b) == 1) byte_token_[b] = t;
        }
    }

    bool complete() const {
        for (int b = 1; b < 256; ++b)
            if (byte_token_[b] < 0) return false;
        return true;
    }

    // nullptr when llama.cpp's parser rejects the grammar.
    engine::sampler_ptr compile(const std::string & gbnf) const {
        return engine::sampler_ptr(llama_sampler_init_grammar(vocab_, gbnf.c_str(), "root"));
    }

    // Whether the grammar (a fresh sampler from compile()) derives exactly `text`.
    bool accepts(const llama_sampler * fresh, const std::string & text) const {
        engine::sampler_ptr s(llama_sampler_clone(fresh));
        for (unsigned char c : text) {
            const llama_token t = byte_token_[c];
            if (c == 0 || !legal(s.get(), t)) return false; // a NUL piece is never legal
            llama_sampler_accept(s.get(), t);
        }
        return legal(s.get(), eos_);
    }

    // The bytes the grammar allows after `prefix`; none when the prefix itself is illegal.
    std::set<unsigned char> next_bytes(const llama_sampler * fresh, const std::string & prefix) const {
        engine::sampler_ptr s(llama_sampler_clone(fresh));
        for (unsigned char c : prefix) {
            if (c == 0 || !legal(s.get(), byte_token_[c])) return {};
            llama_sampler_accept(s.get(), byte_token_[c]);
        }
        std::set<unsigned char> out;
        for (int b = 1; b < 256; ++b)
            if (legal(s.get(), byte_token_[b])) out.insert(static_cast<unsigned char>(b));
        return out;
    }

  private:
    static bool legal(llama_sampler * s, llama_token t) {
        llama_token_data       d{t, 0.0f, 0.0f};
        llama_token_data_array arr{&d, 1, -1, false};
        llama_sampler_apply(s, &arr);
        return std::isfinite(d.logit);
    }

    const llama_vocab *            vocab_;
    llama_token                    eos_;
    std::array<llama_token, 256>   byte_token_;
};

} // namespace specd::grammar_test
