#include "engine/prompt_ends.h"

#include "core/error.h"
#include "engine/text_cutter.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace specd::engine {

namespace {

// A first window's bytes per token needed: most text is 3 to 5 bytes a token; windows double
// from there until they hold enough.
constexpr size_t k_guess_bytes_per_token = 4;
constexpr size_t k_min_window            = 1024;

void check_cancel(const std::atomic<bool> * cancel) {
    if (cancel && cancel->load()) throw Error(ErrorKind::cancelled, "request cancelled");
}

std::string mib(size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
    return buf;
}

// One end's tokens, and the cut they end (head) or start (tail) at, by the cut's head_end.
struct End {
    size_t                   cut = 0;
    std::vector<llama_token> tokens;
};

struct Tokenizing {
    const Model &             model;
    const TextCutter &        cutter;
    std::string_view          text;
    bool                      add_special;
    bool                      parse_special;
    const std::atomic<bool> * cancel;

    bool adds_eos() const { return add_special && llama_vocab_get_add_eos(model.vocab()); }

    // Tokens of text[0, cut) for the first cut past a window that grows until it holds `need`.
    std::optional<End> head(size_t need, size_t limit) const {
        for (size_t window = std::max(k_min_window, need * k_guess_bytes_per_token); window < limit; window *= 2) {
            check_cancel(cancel);
            const auto cut = cutter.first_cut(text, window, std::min(limit, 2 * window));
            if (!cut) continue;
            auto tokens = model.tokenize(text.substr(0, cut->head_end), add_special, parse_special);
            if (adds_eos() && !tokens.empty()) tokens.pop_back(); // the whole text's EOS is at its end
            if (tokens.size() >= need) return End{cut->head_end, std::move(tokens)};
        }
        return std::nullopt;
    }

    // Tokens of text[cut, end) for the last cut before a window from the end that grows.
    std::optional<End> tail(size_t need, size_t limit) const {
        for (size_t window = std::max(k_min_window, need * k_guess_bytes_per_token); window < limit; window *= 2) {
            check_cancel(cancel);
            const size_t n   = text.size();
            const auto   cut = cutter.last_cut(text, n - std::min(n, 2 * window), n - window);
            if (!cut) continue;
            auto tokens = model.tokenize(text.substr(cut->tail_begin), /*add_special=*/false, parse_special);
            if (adds_eos()) tokens.push_back(llama_vocab_eos(model.vocab()));
            if (tokens.size() >= need) return End{cut->head_end, std::move(tokens)};
        }
        return std::nullopt;
    }
};

} // namespace

size_t max_whole_text_bytes(EndsNeeded need) { return std::max(k_max_whole_text_bytes, (need.head + need.tail) * 16); }

EndTokens tokenize_ends(const Model & model, std::string_view text, bool add_special, bool parse_special,
                        EndsNeeded need, const std::atomic<bool> * cancel, std::string_view what) {
    const auto whole = [&] {
        check_cancel(cancel);
        if (need.head + need.tail > 0 && text.size() > max_whole_text_bytes(need)) {
            const TextCutter & cutter = model.text_cutter();
            throw bad_request(std::string(what) + " is " + mib(text.size()) + ", longer than the " +
                              mib(max_whole_text_bytes(need)) + " a text is read whole, and " +
                              (cutter.can_cut() ? std::string("has no ") + cutter.needs() +
                                                      " between two visible characters near its start and its end, "
                                                      "where it could be cut to keep what truncation keeps"
                                                : std::string("this model's tokenizer cannot read only the ends "
                                                              "that truncation keeps")));
        }
        return EndTokens{model.tokenize(text, add_special, parse_special), false};
    };
    // n bytes are at most n tokens (and BOS, EOS): such a text cannot be over. Nor is one
    // whose ends' first windows would meet worth cutting (nor the cutter worth building).
    // The two ends never meet, and neither is longer than a text read whole may be.
    const size_t limit = std::min(text.size() / 2, max_whole_text_bytes(need));
    const size_t first = std::max(k_min_window, std::max(need.head, need.tail) * k_guess_bytes_per_token);
    if (need.head + need.tail == 0 || text.size() + 2 <= need.head + need.tail || first >= limit) return whole();
    const TextCutter & cutter = model.text_cutter();
    if (!cutter.can_cut()) return whole();

    const Tokenizing tok{model, cutter, text, add_special, parse_special, cancel};
    auto             head = tok.head(std::max<size_t>(need.head, 1), limit);
    if (!head) return whole();
    if (need.tail == 0) return EndTokens{std::move(head->tokens), true};
    auto tail = tok.tail(need.tail, limit);
    // Two different cuts: the middle holds a visible character, so at least one token.
    if (!tail || tail->cut <= head->cut) return whole();

    EndTokens out{std::move(head->tokens), true};
    out.tokens.insert(out.tokens.end(), tail->tokens.begin(), tail->tokens.end());
    return out;
}

} // namespace specd::engine
