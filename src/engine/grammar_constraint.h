#pragma once
// One request's grammar state: what `format` allows next. Wraps llama.cpp's grammar sampler
// (character-level pushdown automaton over the GBNF) behind the operations that decoding and
// speculation need: test or accept a token, validate a draft run without advancing, snapshot
// and roll back, the full-vocabulary mask, and the text the grammar forces from here.
#include "core/utf8.h"
#include "engine/llama_handles.h"
#include "engine/vocab_index.h"

#include <span>
#include <string>

namespace specd::engine {

class GrammarConstraint {
  public:
    // Throws specd::Error(bad_request) when `gbnf` does not parse (root rule "root").
    // `index` (the vocabulary's) must outlive the constraint.
    GrammarConstraint(const VocabIndex & index, const std::string & gbnf);
    GrammarConstraint(GrammarConstraint &&) noexcept            = default;
    GrammarConstraint & operator=(GrammarConstraint &&) noexcept = default;

    // An independent copy of the current state (drafting advances its own copy).
    GrammarConstraint clone() const;

    // Whether `token` may come next (microseconds: one candidate through the automaton).
    bool allows(llama_token token) const;
    // Advances past `token`. Throws specd::Error(internal) if the grammar does not allow it
    // (llama.cpp aborts the process on an illegal end-of-generation, so this checks first).
    void accept(llama_token token);
    // How many of `tokens`, in order from here, the grammar allows. Does not advance.
    size_t legal_prefix(std::span<const llama_token> tokens) const;
    // The full mask: every illegal candidate's logit becomes -inf (milliseconds on a large
    // vocabulary; FACTS.md). Does not advance.
    void apply(llama_token_data_array & candidates) const;
    // Shrinks `candidates` to the (at most) k highest-logit tokens the grammar allows, in
    // descending order (lowest id first on a tie), usually without checking all of them;
    // returns how many. Equivalent to apply() followed by top-k, at a fraction of the cost.
    size_t      legal_top(llama_token_data_array & candidates, size_t k) const;
    // The highest-logit token the grammar allows (lowest id on a tie). Reorders and shrinks
    // `candidates`. Throws specd::Error(internal) when none is allowed.
    llama_token best_legal(llama_token_data_array & candidates) const;

    // A saved state to return to. Snapshots stay valid after rollback and can be reused.
    class Snapshot {
        friend class GrammarConstraint;
        sampler_ptr state_;
        Utf8Validator utf8_;
    };
    Snapshot snapshot() const;
    void     rollback(const Snapshot & s);

    // The longest text (at most `max_bytes`) that the grammar allows in exactly one way from
    // here: `","bbox":[` after a label in a compact schema answer; empty where the model has
    // a choice, including ending the answer. Probes character by character with the
    // vocabulary's single-character tokens; a character the vocabulary has no single token
    // for is invisible to the probe, so in rare grammars a position counts as forced while an
    // unlisted character was legal too. Forced text is only ever proposed as drafts, which
    // the target verifies, so that costs a rejected draft, never a wrong answer.
    std::string forced_text(size_t max_bytes) const;

  private:
    GrammarConstraint(const VocabIndex * index, sampler_ptr g, Utf8Validator utf8) :
        index_(index), g_(std::move(g)), utf8_(utf8) {}

    // accept() without the check, for a token already known to be allowed.
    void advance(llama_token token);

    // Whether `token` keeps the answer valid UTF-8 after `v` (end of generation always does).
    bool utf8_ok(const Utf8Validator & v, llama_token token) const {
        return index_->first_byte(token) < 0 || v.accepts(index_->grammar_piece(token));
    }

    const VocabIndex *     index_;
    sampler_ptr            g_;
    Utf8Validator utf8_; // the answer's bytes so far (see core/utf8.h)
};

} // namespace specd::engine
