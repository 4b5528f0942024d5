// specd-grammar-cost VOCAB.gguf SCHEMA.json ANSWER.json
//
// Walks ANSWER (a text the schema's grammar accepts) token by token on VOCAB's tokenizer and
// times each grammar operation the decode loop uses at every position: the single-token
// check, accept, the full-vocabulary mask, the greedy pick (check the best token, search
// for the best legal one when it fails; random logits), validating a 4-token run, the forced
// text, and a clone. Prints one JSON object with the mean microseconds of each (and the vocabulary size,
// grammar size, positions). A benchmark tool: numbers, no pass/fail.
#include "engine/backend.h"
#include "engine/grammar_constraint.h"
#include "engine/llama_handles.h"
#include "grammar/json_schema.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

using namespace specd;

namespace {

std::string read_file(const char * path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot read ") + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
    double sum = 0.0;
    double max = 0.0;
    int    n   = 0;
    void   add(double us) {
        sum += us;
        max = std::max(max, us);
        ++n;
    }
    nlohmann::json json() const { return {{"mean_us", n ? sum / n : 0.0}, {"max_us", max}, {"n", n}}; }
};

} // namespace

int main(int argc, char ** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s VOCAB.gguf SCHEMA.json ANSWER.json\n", argv[0]);
        return 2;
    }
    try {
        engine::ensure_backend();
        llama_model_params mp = llama_model_default_params();
        mp.vocab_only         = true;
        engine::model_ptr model(llama_model_load_from_file(argv[1], mp));
        if (!model) throw std::runtime_error("cannot load the vocabulary");
        const llama_vocab * vocab = llama_model_get_vocab(model.get());

        const std::string gbnf   = grammar::schema_to_grammar(read_file(argv[2]));
        const std::string answer = nlohmann::ordered_json::parse(read_file(argv[3])).dump(); // compact, keys in order
        const double      t0     = now_us();
        const engine::VocabIndex index(vocab);
        const double      index_us = now_us() - t0;
        const auto        tokens   = index.tokenize_greedy(answer);

        engine::GrammarConstraint c(index, gbnf);
        if (const size_t n = c.legal_prefix(tokens); n != tokens.size()) {
            std::string prefix;
            for (size_t i = 0; i <= n; ++i) {
                char buf[128];
                const int32_t len = llama_token_to_piece(vocab, tokens[i], buf, sizeof buf, 0, false);
                prefix.append(buf, size_t(std::max(len, 0)));
            }
            throw std::runtime_error("the grammar rejects the answer at: " + prefix);
        }

        const int32_t                 n_vocab = llama_vocab_n_tokens(vocab);
        std::vector<llama_token_data> cur(static_cast<size_t>(n_vocab));
        Timing check, accept, mask, pick, validate, forced, clone;
        uint64_t rng = 0x9E3779B97F4A7C15ull; // logits like a random-weight model's: no token is favoured
        const auto next_logit = [&] {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            return static_cast<float>(rng >> 40) / float(1 << 24) * 8.0f;
        };
        int    forced_positions = 0;
        int    masked_picks     = 0; // picks whose unmasked best token was illegal
        for (size_t i = 0; i < tokens.size(); ++i) {
            double t = now_us();
            (void) c.allows(tokens[i]);
            check.add(now_us() - t);

            // The greedy pick under the grammar as the sampler makes it, on random logits:
            // the unmasked best token if legal, else the best legal one.
            for (llama_token id = 0; id < n_vocab; ++id) cur[size_t(id)] = {id, next_logit(), 0.0f};
            llama_token_data_array all{cur.data(), cur.size(), -1, false};
            t = now_us();
            const auto best = std::max_element(cur.begin(), cur.end(), [](const auto & a, const auto & b) { return a.logit < b.logit; });
            if (!c.allows(best->id)) {
                (void) c.best_legal(all);
                ++masked_picks;
            }
            pick.add(now_us() - t);

            const size_t run = std::min<size_t>(4, tokens.size() - i);
            t                = now_us();
            (void) c.legal_prefix(std::span(tokens).subspan(i, run));
            validate.add(now_us() - t);

            t = now_us();
            forced_positions += c.forced_text(64).empty() ? 0 : 1;
            forced.add(now_us() - t);

            t = now_us();
            (void) c.clone();
            clone.add(now_us() - t);

            t = now_us();
            c.accept(tokens[i]);
            accept.add(now_us() - t);
        }
        // The full masks in a walk of their own: each one allocates per candidate inside
        // llama.cpp, and interleaved with the other operations it slowed them down several
        // times over (measured on the 151k vocabulary), which the decode loop never sees.
        engine::GrammarConstraint m(index, gbnf);
        for (const llama_token token : tokens) {
            for (llama_token id = 0; id < n_vocab; ++id) cur[size_t(id)] = {id, 0.0f, 0.0f};
            llama_token_data_array arr{cur.data(), cur.size(), -1, false};
            const double t = now_us();
            m.apply(arr);
            mask.add(now_us() - t);
            m.accept(token);
        }
        const nlohmann::json out = {
            {"n_vocab", n_vocab},          {"grammar_bytes", gbnf.size()},   {"answer_bytes", answer.size()},
            {"positions", tokens.size()},  {"forced_positions", forced_positions},
            {"vocab_index_us", index_us},  {"check", check.json()},          {"accept", accept.json()},
            {"mask", mask.json()},         {"greedy_pick", pick.json()},
            {"greedy_picks_searched", masked_picks},         {"validate4", validate.json()},   {"forced_text", forced.json()},
            {"clone", clone.json()}};
        std::printf("%s\n", out.dump().c_str());
        return 0;
    } catch (const std::exception & e) {
        std::fprintf(stderr, "specd-grammar-cost: %s\n", e.what());
        return 1;
    }
}
