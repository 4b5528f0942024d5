#include "engine/forced_speller.h"

namespace specd::engine {

namespace {

// Bounds the memory (a few MB at most); structure repeats, so a fresh start relearns fast.
constexpr size_t k_max_choices = 1 << 15;

} // namespace

std::string ForcedSpeller::key(llama_token prev, std::string_view text) {
    std::string k(reinterpret_cast<const char *>(&prev), sizeof prev);
    k.append(text);
    return k;
}

std::vector<llama_token> ForcedSpeller::spell(llama_token prev, std::string_view text, size_t max_tokens) const {
    std::vector<llama_token> out;
    while (!text.empty() && out.size() < max_tokens) {
        llama_token t = -1;
        if (auto it = choices_.find(key(prev, text)); it != choices_.end()) {
            const std::string piece = model_.token_piece(it->second);
            if (!piece.empty() && text.starts_with(piece)) {
                t = it->second;
                text.remove_prefix(piece.size());
            } else if (piece.size() > text.size() && std::string_view(piece).starts_with(text)) {
                out.push_back(it->second); // the target ran on past the forced text
                break;
            }
        }
        if (t < 0) {
            t = model_.vocab_index().longest_prefix_token(text);
            if (t < 0) break;
            text.remove_prefix(model_.token_piece(t).size());
        }
        out.push_back(t);
        prev = t;
    }
    return out;
}

void ForcedSpeller::learn(llama_token prev, std::string_view text, llama_token chosen) {
    if (text.empty()) return;
    if (choices_.size() >= k_max_choices) choices_.clear();
    choices_[key(prev, text)] = chosen;
}

} // namespace specd::engine
