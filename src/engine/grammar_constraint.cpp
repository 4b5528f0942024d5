#include "engine/grammar_constraint.h"

#include "core/error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace specd::engine {

namespace {

bool allowed_by(llama_sampler * g, llama_token token) {
    llama_token_data       d{token, 0.0f, 0.0f};
    llama_token_data_array one{&d, 1, -1, false};
    llama_sampler_apply(g, &one);
    return !std::isinf(d.logit);
}

} // namespace

GrammarConstraint::GrammarConstraint(const VocabIndex & index, const std::string & gbnf) :
    index_(&index), g_(llama_sampler_init_grammar(index.vocab(), gbnf.c_str(), "root")) {
    if (!g_) throw bad_request("invalid grammar for format");
}

GrammarConstraint GrammarConstraint::clone() const {
    return GrammarConstraint(index_, sampler_ptr(llama_sampler_clone(g_.get())), utf8_);
}

bool GrammarConstraint::allows(llama_token token) const { return utf8_ok(utf8_, token) && allowed_by(g_.get(), token); }

void GrammarConstraint::accept(llama_token token) {
    if (!allows(token)) throw Error(ErrorKind::internal, "token " + std::to_string(token) + " is not allowed by the grammar");
    advance(token);
}

void GrammarConstraint::advance(llama_token token) {
    llama_sampler_accept(g_.get(), token);
    if (index_->first_byte(token) >= 0) utf8_.feed(index_->grammar_piece(token));
}

size_t GrammarConstraint::legal_prefix(std::span<const llama_token> tokens) const {
    if (tokens.empty()) return 0;
    GrammarConstraint copy = clone();
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!copy.allows(tokens[i])) return i;
        if (i + 1 < tokens.size()) copy.advance(tokens[i]);
    }
    return tokens.size();
}

void GrammarConstraint::apply(llama_token_data_array & candidates) const {
    llama_sampler_apply(g_.get(), &candidates);
    for (size_t i = 0; i < candidates.size; ++i) {
        auto & c = candidates.data[i];
        if (!std::isinf(c.logit) && !utf8_ok(utf8_, c.id)) c.logit = -INFINITY;
    }
}

size_t GrammarConstraint::legal_top(llama_token_data_array & arr, size_t k) const {
    // Blocks of candidates in descending logit order, each checked with one grammar pass:
    // every legal token of a block outranks every candidate of the later blocks, so the
    // search stops at the block that completes the k. Where few tokens are legal (after a
    // digit: digits, "," and "]") that is a few hundred candidates instead of the vocabulary.
    const auto by_logit = [](const llama_token_data & a, const llama_token_data & b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    // First, one grammar pass over the single-byte tokens says which first bytes can start
    // a legal token (a lone lead byte is legal when some character starting with it is);
    // every candidate starting with another byte is illegal. A byte without such a token
    // keeps its candidates.
    std::array<bool, 256> first_ok;
    first_ok.fill(true);
    {
        std::array<llama_token_data, 256> probe;
        std::array<unsigned char, 256>    byte_of;
        size_t                            n = 0;
        for (int b = 0; b < 256; ++b) {
            if (const llama_token t = index_->byte_token(static_cast<unsigned char>(b)); t >= 0) {
                probe[n]     = {t, 0.0f, 0.0f};
                byte_of[n++] = static_cast<unsigned char>(b);
            }
        }
        llama_token_data_array parr{probe.data(), n, -1, false};
        apply(parr);
        for (size_t i = 0; i < n; ++i) first_ok[byte_of[i]] = !std::isinf(probe[i].logit);
    }
    llama_token_data * const first = arr.data;
    llama_token_data *       last  = arr.data + arr.size;
    last = std::remove_if(first, last, [&](const llama_token_data & d) {
        const int b = index_->first_byte(d.id);
        return b >= 0 && !first_ok[size_t(b)];
    });
    size_t found = 0; // legal tokens gathered at first[0, found)
    std::vector<llama_token_data> legal;
    size_t block = std::max<size_t>(256, 2 * k);
    for (llama_token_data * lo = first; lo < last && found < k; block *= 4) {
        llama_token_data * const hi = lo + std::min(block, static_cast<size_t>(last - lo));
        if (hi < last) std::nth_element(lo, hi - 1, last, by_logit);
        llama_token_data_array part{lo, static_cast<size_t>(hi - lo), -1, false};
        apply(part); // the grammar and UTF-8 validity
        legal.clear();
        for (const llama_token_data * c = lo; c < hi; ++c) {
            if (!std::isinf(c->logit)) legal.push_back(*c);
        }
        const size_t take = std::min(legal.size(), k - found);
        std::partial_sort(legal.begin(), legal.begin() + take, legal.end(), by_logit);
        // Slots before `lo` hold masked candidates of earlier blocks; slots inside the block
        // were copied out above. Either may be overwritten.
        std::copy_n(legal.begin(), take, first + found);
        found += take;
        lo = hi;
    }
    arr.size     = found;
    arr.selected = -1;
    arr.sorted   = false;
    return found;
}

llama_token GrammarConstraint::best_legal(llama_token_data_array & arr) const {
    if (legal_top(arr, 1) == 0) throw Error(ErrorKind::internal, "no token is possible");
    return arr.data[0].id;
}

GrammarConstraint::Snapshot GrammarConstraint::snapshot() const {
    Snapshot s;
    s.state_.reset(llama_sampler_clone(g_.get()));
    s.utf8_ = utf8_;
    return s;
}

void GrammarConstraint::rollback(const Snapshot & s) {
    g_.reset(llama_sampler_clone(s.state_.get()));
    utf8_ = s.utf8_;
}

std::string GrammarConstraint::forced_text(size_t max_bytes) const {
    if (utf8_.mid_character()) return ""; // the probe speaks whole characters
    const VocabIndex &            index = *index_;
    std::string                   out;
    sampler_ptr           copy; // cloned only once a character is forced
    llama_sampler *               g = g_.get();
    std::vector<llama_token_data> probe;

    // Index in `chars` of the one legal character, -1 when none, -2 when several.
    const auto single_legal = [&](std::span<const VocabIndex::CharToken> chars, std::span<const llama_token> eog) {
        probe.clear();
        for (const auto & c : chars) probe.push_back({c.token, 0.0f, 0.0f});
        for (llama_token t : eog) probe.push_back({t, 0.0f, 0.0f});
        llama_token_data_array arr{probe.data(), probe.size(), -1, false};
        llama_sampler_apply(g, &arr);
        int found = -1;
        for (size_t i = 0; i < probe.size(); ++i) {
            if (std::isinf(probe[i].logit)) continue;
            if (i >= chars.size() || found != -1) return -2; // the answer may end, or a choice
            found = static_cast<int>(i);
        }
        return found;
    };

    while (out.size() < max_bytes) {
        const VocabIndex::CharToken * forced = nullptr;
        int i = single_legal(index.ascii_chars(), index.eog_tokens());
        if (i >= 0) {
            forced = &index.ascii_chars()[size_t(i)];
        } else if (i == -1) {
            // No ASCII character fits (inside a non-ASCII literal): look at the others.
            i = single_legal(index.other_chars(), {});
            if (i >= 0) forced = &index.other_chars()[size_t(i)];
        }
        if (!forced || out.size() + forced->text.size() > max_bytes) break;
        if (!copy) {
            copy.reset(llama_sampler_clone(g_.get()));
            g = copy.get();
        }
        llama_sampler_accept(g, forced->token);
        out += forced->text;
    }
    return out;
}

} // namespace specd::engine
