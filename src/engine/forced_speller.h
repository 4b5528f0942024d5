#pragma once
// How to spell grammar-forced text in tokens. The text is fixed, but many token sequences
// spell it ("," "\"" or ",\"" ...), and a forced draft is only accepted where the target
// would have chosen the same token. So the speller remembers, per loaded model, which token
// the target chose where a text was forced after a given token, and spells with those
// choices; where it has none, it takes the longest matching token.
#include "engine/model.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace specd::engine {

class ForcedSpeller {
  public:
    explicit ForcedSpeller(const Model & model) : model_(model) {}

    // At most `max_tokens` tokens spelling `text` (forced after `prev`); the last one may
    // reach past the text when the target did so before (the caller validates the run).
    std::vector<llama_token> spell(llama_token prev, std::string_view text, size_t max_tokens) const;

    // Where `text` was forced after `prev`, the target chose `chosen`.
    void learn(llama_token prev, std::string_view text, llama_token chosen);

    size_t size() const { return choices_.size(); }

  private:
    static std::string key(llama_token prev, std::string_view text);

    const Model &                                model_;
    std::unordered_map<std::string, llama_token> choices_;
};

} // namespace specd::engine
