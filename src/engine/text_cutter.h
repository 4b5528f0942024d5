#pragma once
// Where a text can be cut so that tokenizing the two pieces gives exactly the tokens of
// tokenizing it whole, for one vocabulary. This is what lets a prompt far over the context be
// tokenized only near its two ends (engine/prompt_ends.h).
//
// llama.cpp first splits a text at special-token texts, then tokenizes each piece:
//   SPM (llama, phi-3): spaces become "▁" and symbols merge by score across the whole piece.
//     A vocabulary with no token in which a non-space character is followed by "▁" can never
//     merge across "X▁Y"; the tail "Y..." gets back its "▁" from the space llama.cpp puts
//     before a text (or keeps the space when the vocabulary adds none). Cut: "X Y".
//   BPE (gpt-2 style: llama 3, qwen, gemma 4, ...): a pre-tokenizer regex splits the text into
//     words that merge separately. Every pre-tokenizer of the pinned llama.cpp ends a word
//     after "X\n" when a visible character Y follows, and reads "...X\n" the same at the end
//     of a text as inside one; a vocabulary with no token "\nY" could not merge across it
//     even if one did not. Cut: "X\n|Y".
// X and Y are printable ASCII other than space (a Unicode space next to the cut would join
// the whitespace around it). A cut is never where a special-token text touches it. The rule is also checked on a sample
// text when the cutter is built: if the pieces' tokens differ from the whole's there, the
// vocabulary is not cut at all.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

class Model;

class TextCutter {
  public:
    explicit TextCutter(const Model & model);

    // A place to cut `text`: the head is [0, head_end), the tail [tail_begin, size); what is
    // between (a space the tokenizer puts back) belongs to neither.
    struct Cut {
        size_t head_end   = 0;
        size_t tail_begin = 0;
    };

    bool can_cut() const { return rule_ != Rule::none; }
    // "line break" or "word break": what a text needs for this vocabulary to be cut.
    const char * needs() const;
    // The first cut with head_end in [from, to), searching forward; the last, searching back.
    std::optional<Cut> first_cut(std::string_view text, size_t from, size_t to) const;
    std::optional<Cut> last_cut(std::string_view text, size_t from, size_t to) const;
    // The longest text one token stands for (a bound on bytes per token).
    size_t max_token_bytes() const { return max_token_bytes_; }

  private:
    enum class Rule { none, space, newline };

    std::optional<Cut> cut_at(std::string_view text, size_t sep) const; // `sep`: the separator's index
    bool               special_touches(std::string_view text, size_t sep) const;
    bool               sample_holds(const Model & model) const;

    Rule                     rule_ = Rule::none;
    bool                     tail_keeps_space_ = false; // SPM without a leading space: the tail starts at it
    std::vector<std::string> specials_; // texts split out before tokenizing (control, user-defined, unknown)
    size_t                   max_token_bytes_ = 1;
};

} // namespace specd::engine
