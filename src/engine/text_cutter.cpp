#include "engine/text_cutter.h"

#include "engine/model.h"

#include <algorithm>

namespace specd::engine {

namespace {

// Printable ASCII other than space: never part of a whitespace run, never inside a UTF-8 sequence.
bool visible(char c) { return c > ' ' && c < 0x7f; }

constexpr int k_max_tries = 4096;

// Texts like the prompts this is for: prose, code, numbers, other scripts, and a few of the
// special-token spellings chat templates use.
constexpr std::string_view k_sample =
    "The quick brown fox jumps over 13 lazy dogs.\nIt was 1,234,567 years ago; nobody knew why.\n"
    "def f(x):\n    return x * 2  # twice\n}\n{\"a\": [1, 2.5, null], \"b\": \"c d\"}\nfoo.bar(baz) == qux\n"
    "<|user|>\nHello there!<|end|>\n<|assistant|>\n<start_of_turn>user hi<end_of_turn>\n"
    "Ünïcödé wörds, 日本語のテキスト。 Ελληνικά κείμενα.\nEnd of line\tTab\ttab \nlast words here";

} // namespace

TextCutter::TextCutter(const Model & model) {
    const llama_vocab * vocab = model.vocab();
    const int32_t       n     = llama_vocab_n_tokens(vocab);
    bool space_joins = false; // a token with a non-space character followed by a space
    bool line_joins  = false; // a token with "\n" followed by a visible character
    for (llama_token t = 0; t < n; ++t) {
        const auto  attr = llama_vocab_get_attr(vocab, t);
        std::string piece(64, '\0');
        int32_t     len = llama_token_to_piece(vocab, t, piece.data(), int32_t(piece.size()), 0, /*special=*/true);
        if (len < 0) {
            piece.resize(size_t(-len));
            len = llama_token_to_piece(vocab, t, piece.data(), int32_t(piece.size()), 0, true);
        }
        piece.resize(size_t(std::max(len, 0)));
        max_token_bytes_ = std::max(max_token_bytes_, piece.size());
        if (attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN)) {
            const char * text = llama_vocab_get_text(vocab, t);
            if (text && *text) specials_.emplace_back(text);
            continue;
        }
        for (size_t i = 1; i < piece.size(); ++i) {
            space_joins |= piece[i] == ' ' && piece[i - 1] != ' ';
            line_joins |= piece[i - 1] == '\n' && visible(piece[i]);
        }
    }

    switch (llama_vocab_type(vocab)) {
        case LLAMA_VOCAB_TYPE_SPM: {
            if (space_joins) break;
            rule_ = Rule::space;
            // llama.cpp puts a space before an SPM text when the vocabulary says so: "a"
            // then reads as " a".
            const auto        a     = model.tokenize("a", false, false);
            const std::string first = a.empty() ? "" : model.token_piece(a.front());
            tail_keeps_space_       = first.empty() || first.front() != ' ';
            break;
        }
        case LLAMA_VOCAB_TYPE_BPE:
            if (!line_joins) rule_ = Rule::newline;
            break;
        default: break; // WPM, UGM, RWKV, PLaMo-2: not cut
    }
    if (rule_ != Rule::none && !sample_holds(model)) rule_ = Rule::none;
}

const char * TextCutter::needs() const { return rule_ == Rule::newline ? "line break" : "space between words"; }

bool TextCutter::special_touches(std::string_view text, size_t sep) const {
    // A special text touches when it covers X, the separator or Y: [sep - 1, sep + 2).
    for (const std::string & s : specials_) {
        const size_t    lo     = sep >= s.size() ? sep - s.size() : 0;
        const size_t    hi     = std::min(text.size(), sep + 1 + s.size());
        const auto      window = text.substr(lo, hi - lo);
        for (size_t at = window.find(s); at != std::string_view::npos; at = window.find(s, at + 1)) {
            if (lo + at < sep + 2 && lo + at + s.size() > sep - 1) return true;
        }
    }
    return false;
}

std::optional<TextCutter::Cut> TextCutter::cut_at(std::string_view text, size_t sep) const {
    if (sep == 0 || sep + 1 >= text.size() || !visible(text[sep - 1]) || !visible(text[sep + 1])) return std::nullopt;
    if (text[sep] != (rule_ == Rule::space ? ' ' : '\n') || special_touches(text, sep)) return std::nullopt;
    if (rule_ == Rule::space) return Cut{sep, tail_keeps_space_ ? sep : sep + 1};
    return Cut{sep + 1, sep + 1};
}

// Separators are looked at up to k_max_tries per search: a text crowded with special-token
// texts next to them is not searched through megabytes.
std::optional<TextCutter::Cut> TextCutter::first_cut(std::string_view text, size_t from, size_t to) const {
    if (rule_ == Rule::none) return std::nullopt;
    const char   sep   = rule_ == Rule::space ? ' ' : '\n';
    const size_t shift = rule_ == Rule::newline ? 1 : 0; // head_end - separator index
    to = std::min(to, text.size());
    size_t i = from >= shift ? from - shift : 0;
    for (int tries = 0; tries < k_max_tries; ++tries, ++i) {
        i = text.find(sep, i);
        if (i == std::string_view::npos || i + shift >= to) break;
        if (auto cut = cut_at(text, i); cut && cut->head_end >= from) return cut;
    }
    return std::nullopt;
}

std::optional<TextCutter::Cut> TextCutter::last_cut(std::string_view text, size_t from, size_t to) const {
    if (rule_ == Rule::none) return std::nullopt;
    const char   sep   = rule_ == Rule::space ? ' ' : '\n';
    const size_t shift = rule_ == Rule::newline ? 1 : 0;
    to = std::min(to, text.size());
    if (to <= from || to <= shift) return std::nullopt;
    size_t i = to - 1 - shift;
    for (int tries = 0; tries < k_max_tries; ++tries) {
        i = text.rfind(sep, i);
        if (i == std::string_view::npos || i + shift < from) break;
        if (auto cut = cut_at(text, i)) return cut;
        if (i == 0) break;
        --i;
    }
    return std::nullopt;
}

// Every cut of the sample: the head's tokens then the tail's must be the whole text's.
bool TextCutter::sample_holds(const Model & model) const {
    const auto whole = model.tokenize(k_sample, true, true);
    const bool eos   = llama_vocab_get_add_eos(model.vocab());
    int        cuts  = 0;
    for (auto cut = first_cut(k_sample, 0, k_sample.size()); cut; cut = first_cut(k_sample, cut->head_end + 1, k_sample.size())) {
        auto       pieces = model.tokenize(k_sample.substr(0, cut->head_end), true, true);
        const auto tail   = model.tokenize(k_sample.substr(cut->tail_begin), false, true);
        if (eos) pieces.pop_back(); // the head's own EOS: the whole text has one, at its end
        pieces.insert(pieces.end(), tail.begin(), tail.end());
        if (eos) pieces.push_back(llama_vocab_eos(model.vocab()));
        if (pieces != whole) return false;
        ++cuts;
    }
    return cuts > 0;
}

} // namespace specd::engine
