#include "engine/vocab_index.h"

#include "core/utf8.h"

#include <algorithm>

namespace specd::engine {

namespace {

// Longest piece worth indexing for forced text: structure between JSON values is short.
constexpr size_t k_max_indexed_piece = 32;

std::string piece_of(const llama_vocab * vocab, llama_token t, bool special = false) {
    char buf[256];
    const int32_t n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, special);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

bool is_probe_ascii(unsigned char c) { return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r'; }

} // namespace

VocabIndex::VocabIndex(const llama_vocab * vocab) : vocab_(vocab) {
    const int32_t n = llama_vocab_n_tokens(vocab);
    std::unordered_map<std::string, size_t> char_slot; // characters already listed
    const auto add = [&](llama_token t, std::string p) {
        if (p.size() <= k_max_indexed_piece && by_piece_.emplace(p, t).second) {
            max_piece_            = std::max(max_piece_, p.size());
            piece_len_[size_t(t)] = static_cast<uint8_t>(p.size());
        }
        const auto c = static_cast<unsigned char>(p[0]);
        if (utf8_sequence_length(c) != p.size() || char_slot.count(p)) return;
        if (p.size() == 1 && !is_probe_ascii(c)) return;
        auto & list = p.size() == 1 ? ascii_ : other_;
        char_slot.emplace(p, list.size());
        list.push_back({t, std::move(p)});
    };
    // Normal tokens first, so they win over byte-fallback tokens of the same text (the
    // tokenizer's pick); an SPM vocabulary has "\n" only as the byte token <0x0A>.
    std::vector<llama_token> bytes;
    first_byte_.assign(size_t(n), -1);
    grammar_pieces_.assign(size_t(n), std::string());
    piece_len_.assign(size_t(n), 0);
    byte_token_.fill(-1);
    for (llama_token t = 0; t < n; ++t) {
        if (llama_vocab_is_eog(vocab, t)) {
            eog_.push_back(t);
            continue;
        }
        // llama.cpp's grammar reads control tokens' text too (special rendering).
        std::string g = piece_of(vocab, t, /*special=*/true);
        if (!g.empty() && g[0] != 0) {
            const auto b           = static_cast<unsigned char>(g[0]);
            first_byte_[size_t(t)] = b;
            if (g.size() == 1 && byte_token_[b] < 0) byte_token_[b] = t;
            grammar_pieces_[size_t(t)] = g;
        }
        const auto attr = llama_vocab_get_attr(vocab, t);
        if (attr & LLAMA_TOKEN_ATTR_BYTE) bytes.push_back(t);
        if (!(attr & LLAMA_TOKEN_ATTR_NORMAL)) continue;
        // Special rendering changes only control and unknown tokens: this is the normal text.
        if (!g.empty()) add(t, std::move(g));
    }
    // A lone byte above 0x7F is not a character: only ASCII byte tokens stand for one.
    for (llama_token t : bytes) {
        std::string p = piece_of(vocab, t);
        if (p.size() == 1 && static_cast<unsigned char>(p[0]) < 0x80) add(t, std::move(p));
    }
}

llama_token VocabIndex::longest_prefix_token(std::string_view text) const {
    for (size_t len = std::min(max_piece_, text.size()); len > 0; --len) {
        if (auto it = by_piece_.find(std::string(text.substr(0, len))); it != by_piece_.end()) return it->second;
    }
    return -1;
}

std::vector<llama_token> VocabIndex::tokenize_greedy(std::string_view text) const {
    std::vector<llama_token> out;
    while (!text.empty()) {
        const llama_token t = longest_prefix_token(text);
        if (t < 0) break;
        out.push_back(t);
        text.remove_prefix(piece_length(t));
    }
    return out;
}

size_t VocabIndex::bytes() const {
    const auto str = [](const std::string & x) { return x.capacity() > 15 ? x.capacity() + 1 : 0; }; // past SSO
    size_t n = sizeof(*this);
    for (const auto * chars : {&ascii_, &other_}) {
        n += chars->capacity() * sizeof(CharToken);
        for (const auto & c : *chars) n += str(c.text);
    }
    n += eog_.capacity() * sizeof(llama_token) + first_byte_.capacity() * sizeof(int16_t);
    n += grammar_pieces_.capacity() * sizeof(std::string) + piece_len_.capacity();
    for (const auto & p : grammar_pieces_) n += str(p);
    // An unordered_map node: the pair and a next pointer (and the cached hash); plus buckets.
    n += by_piece_.bucket_count() * sizeof(void *);
    for (const auto & [k, v] : by_piece_) n += sizeof(std::pair<const std::string, llama_token>) + 2 * sizeof(void *) + str(k);
    return n;
}

} // namespace specd::engine
