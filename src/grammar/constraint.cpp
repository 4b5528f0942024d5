#include "grammar/constraint.h"

#include "core/error.h"

#include <cmath>
#include <vector>

namespace specd::grammar {

namespace {

bool allowed_by(llama_sampler * g, llama_token token) {
    llama_token_data       d{token, 0.0f, 0.0f};
    llama_token_data_array one{&d, 1, -1, false};
    llama_sampler_apply(g, &one);
    return !std::isinf(d.logit);
}

} // namespace

Constraint::Constraint(const llama_vocab * vocab, const std::string & gbnf) :
    g_(llama_sampler_init_grammar(vocab, gbnf.c_str(), "root")) {
    if (!g_) throw bad_request("invalid grammar for format");
}

Constraint Constraint::clone() const { return Constraint(engine::sampler_ptr(llama_sampler_clone(g_.get()))); }

bool Constraint::allows(llama_token token) const { return allowed_by(g_.get(), token); }

void Constraint::accept(llama_token token) {
    if (!allows(token)) throw Error(ErrorKind::internal, "token " + std::to_string(token) + " is not allowed by the grammar");
    llama_sampler_accept(g_.get(), token);
}

size_t Constraint::legal_prefix(std::span<const llama_token> tokens) const {
    if (tokens.empty()) return 0;
    engine::sampler_ptr g(llama_sampler_clone(g_.get()));
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!allowed_by(g.get(), tokens[i])) return i;
        if (i + 1 < tokens.size()) llama_sampler_accept(g.get(), tokens[i]);
    }
    return tokens.size();
}

void Constraint::apply(llama_token_data_array & candidates) const { llama_sampler_apply(g_.get(), &candidates); }

Constraint::Snapshot Constraint::snapshot() const {
    Snapshot s;
    s.state_.reset(llama_sampler_clone(g_.get()));
    return s;
}

void Constraint::rollback(const Snapshot & s) { g_.reset(llama_sampler_clone(s.state_.get())); }

std::string Constraint::forced_text(const VocabIndex & index, size_t max_bytes) const {
    std::string                   out;
    engine::sampler_ptr           copy; // cloned only once a character is forced
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

} // namespace specd::grammar
