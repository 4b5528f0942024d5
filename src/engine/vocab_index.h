#pragma once
// What the grammar constraint needs to know about a vocabulary, computed once per model:
// which tokens spell a single character (to probe the grammar one character at a time) and
// a piece -> token map (to turn forced text back into tokens).
#include <llama.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace specd::engine {

class VocabIndex {
  public:
    explicit VocabIndex(const llama_vocab * vocab);

    const llama_vocab * vocab() const { return vocab_; }

    // One token per character: printable ASCII plus \t \n \r, then other code points.
    // (n_ascii_chars) / (n_other_chars), each entry {token, UTF-8 text}.
    struct CharToken {
        llama_token token;
        std::string text;
    };
    std::span<const CharToken>  ascii_chars() const { return ascii_; }
    std::span<const CharToken>  other_chars() const { return other_; }
    std::span<const llama_token> eog_tokens() const { return eog_; }

    // The first byte of `token`'s text as the grammar sees it, or -1 for tokens the grammar
    // judges otherwise (end of generation, empty pieces).
    int first_byte(llama_token token) const { return first_byte_[size_t(token)]; }
    // `token`'s text as the grammar sees it (control tokens rendered), empty for
    // end-of-generation tokens.
    std::string_view grammar_piece(llama_token token) const { return grammar_pieces_[size_t(token)]; }
    // A token whose whole text is the byte b, -1 if the vocabulary has none. The grammar
    // judges a lone lead byte by whether any character starting with it could follow, so
    // this token is legal exactly when some token starting with b can be.
    llama_token byte_token(unsigned char b) const { return byte_token_[b]; }

    // The normal token with the longest piece that `text` starts with, -1 if none.
    llama_token longest_prefix_token(std::string_view text) const;

    // Longest-match tokenization of `text` into normal tokens whose pieces spell it exactly;
    // stops early (returns a shorter run) at a byte no token starts with.
    std::vector<llama_token> tokenize_greedy(std::string_view text) const;

    // Heap bytes held (for the memory ledger): containers and the strings' own buffers.
    size_t bytes() const;

  private:
    const llama_vocab *                          vocab_;
    std::vector<CharToken>                       ascii_;
    std::vector<CharToken>                       other_;
    std::vector<llama_token>                     eog_;
    // (n_vocab) grammar_pieces_' first bytes, kept apart: legal_top reads one per candidate.
    std::vector<int16_t>                         first_byte_;
    std::vector<std::string>                     grammar_pieces_; // (n_vocab)
    std::array<llama_token, 256>                 byte_token_;
    size_t piece_length(llama_token t) const { return piece_len_[size_t(t)]; }

    std::unordered_map<std::string, llama_token> by_piece_;
    std::vector<uint8_t>                         piece_len_; // (n_vocab): length of indexed pieces
    size_t                                       max_piece_ = 0;
};

} // namespace specd::engine
