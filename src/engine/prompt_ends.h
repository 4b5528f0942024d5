#pragma once
// Tokenizing a text of any length with bounded work. A prompt over the context keeps only its
// first num_keep and its last tokens (Ollama's truncation): when a text is that long, only its
// two ends are tokenized, cut where the tokens provably equal the whole text's
// (engine/text_cutter.h), in windows that grow until they hold enough tokens, with the cancel
// flag checked between them. The middle is never tokenized, nor held as tokens.
#include "engine/model.h"

#include <atomic>
#include <cstddef>
#include <string_view>
#include <vector>

namespace specd::engine {

// How many tokens are needed from each end. {0, 0}: the whole text.
struct EndsNeeded {
    size_t head = 0;
    size_t tail = 0;
};

struct EndTokens {
    std::vector<llama_token> tokens;
    // True when the middle was left out: `tokens` are at least `head` first and at least
    // `tail` last tokens of the whole text's, and the whole text has more than tokens.size().
    bool elided = false;
};

// Texts that cannot be cut (a vocabulary without a safe cut, no line break near an end) are
// tokenized whole up to this many bytes, or 16 bytes per token needed when that is more:
// about 2 s for SPM vocabularies on one core.
constexpr size_t k_max_whole_text_bytes = size_t(1) << 20;
size_t max_whole_text_bytes(EndsNeeded need);

// `model.tokenize(text, add_special, parse_special)`, or its two ends (see above) when the
// text is long. Throws bad_request naming the limit when a longer text cannot be cut (`what`
// names the text: "the prompt", "input 2"), and Error(cancelled) when `cancel` is set between
// windows.
EndTokens tokenize_ends(const Model & model, std::string_view text, bool add_special, bool parse_special,
                        EndsNeeded need, const std::atomic<bool> * cancel = nullptr,
                        std::string_view what = "the prompt");

} // namespace specd::engine
