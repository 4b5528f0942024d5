// Grammar-aware speculation: the constraint object (validate, snapshot/rollback, forced
// text), forced text proposed as drafts, the draft model drafting under the grammar, and
// prompt lookup cut by it. Answers must be the ones decoding without any drafts gives.
#include "core/error.h"
#include "engine/forced_speller.h"
#include "engine/grammar_constraint.h"
#include "engine/session.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace specd;
using namespace specd::engine;
using Constraint = GrammarConstraint;

namespace {

// A compact answer with fixed keys: the structure between the free parts is forced.
const std::string k_bbox_gbnf = R"(root ::= "[" item ("," item){2} "]"
item ::= "{\"label\":\"" [a-z]{1,6} "\",\"bbox\":[" num "," num "," num "," num "]}"
num  ::= [0-9] | [1-9] [0-9] | [1-9] [0-9] [0-9]
)";

ContextOptions ctx(int n_ctx = 512) {
    ContextOptions c;
    c.num_ctx = n_ctx;
    return c;
}

GenerateOptions constrained(int n, std::optional<int> fixed_k, const std::string & gbnf = k_bbox_gbnf) {
    GenerateOptions o = fixtures::greedy(n);
    o.draft_fixed_k   = fixed_k;
    o.grammar         = gbnf;
    return o;
}

// Accepts the tokens spelling `text` (our own spelling: any spelling is legal text).
void accept_text(Constraint & c, const VocabIndex & ix, const std::string & text) {
    for (llama_token t : ix.tokenize_greedy(text)) c.accept(t);
}

const VocabIndex & tiny_index() { return fixtures::shared_model("tiny.gguf")->vocab_index(); }

} // namespace

TEST(VocabIndex, SpellsTextAndListsCharacters) {
    auto         model = fixtures::shared_model("tiny.gguf");
    const auto & ix    = tiny_index();
    for (const std::string text : {"{\"label\":\"", "\",\"bbox\":[", "]}", "\n  ", "héllo wörld"}) {
        std::string spelled;
        for (llama_token t : ix.tokenize_greedy(text)) spelled += model->token_piece(t);
        EXPECT_EQ(spelled, text);
    }
    EXPECT_GE(ix.ascii_chars().size(), 95u); // printable ASCII, and \n through its byte token
    bool newline = false;
    for (const auto & c : ix.ascii_chars()) newline |= c.text == "\n";
    EXPECT_TRUE(newline);
    EXPECT_FALSE(ix.other_chars().empty());
    EXPECT_FALSE(ix.eog_tokens().empty());
}

TEST(Constraint, ForcedTextFollowsTheGrammar) {
    auto       model = fixtures::shared_model("tiny.gguf");
    const auto & ix  = tiny_index();
    Constraint c(model->vocab_index(), k_bbox_gbnf);
    EXPECT_EQ(c.forced_text(64), "[{\"label\":\"");
    EXPECT_EQ(c.forced_text(4), "[{\"l"); // bounded by max_bytes
    accept_text(c, ix, "[{\"label\":\"ab");
    EXPECT_EQ(c.forced_text(64), ""); // another letter or the closing quote
    accept_text(c, ix, "cdef");
    EXPECT_EQ(c.forced_text(64), "\",\"bbox\":["); // six letters: the label must end
    accept_text(c, ix, "\",\"bbox\":[1,2,3,45");
    EXPECT_EQ(c.forced_text(64), ""); // a third digit or "]}"
    accept_text(c, ix, "6");
    EXPECT_EQ(c.forced_text(64), "]},{\"label\":\"");
    accept_text(c, ix, "]},{\"label\":\"a\",\"bbox\":[0,0,0,0]},{\"label\":\"b\",\"bbox\":[0,0,0,0]}");
    EXPECT_EQ(c.forced_text(64), "]");
    accept_text(c, ix, "]");
    EXPECT_EQ(c.forced_text(64), ""); // complete: ending is a choice the model makes
    EXPECT_TRUE(c.allows(ix.eog_tokens()[0]));
}

TEST(Constraint, ForcedTextOfANonAsciiLiteral) {
    auto       model = fixtures::shared_model("tiny.gguf");
    Constraint c(model->vocab_index(), R"(root ::= "é" [a-z])");
    EXPECT_EQ(c.forced_text(64), "é");
}

TEST(Constraint, LegalPrefixDoesNotAdvanceAndSnapshotsRollBack) {
    auto       model = fixtures::shared_model("tiny.gguf");
    const auto & ix  = tiny_index();
    Constraint c(model->vocab_index(), k_bbox_gbnf);
    const auto good = ix.tokenize_greedy("[{\"label\":\"cat\",\"bbox\":[1");
    auto       bad  = ix.tokenize_greedy("[{\"label\":\"cat\",\"box");
    EXPECT_EQ(c.legal_prefix(good), good.size());
    EXPECT_EQ(c.legal_prefix(bad), ix.tokenize_greedy("[{\"label\":\"cat\",\"").size());
    EXPECT_EQ(c.legal_prefix(good), good.size()); // still from the start

    const auto start = c.snapshot();
    for (llama_token t : good) c.accept(t);
    EXPECT_FALSE(c.allows(good[0]));
    EXPECT_THROW(c.accept(good[0]), Error);
    const auto mid = c.snapshot();
    c.rollback(start);
    EXPECT_EQ(c.legal_prefix(good), good.size());
    EXPECT_EQ(c.forced_text(64), "[{\"label\":\"");
    c.rollback(mid); // a snapshot stays usable after a rollback
    EXPECT_EQ(c.forced_text(64), "");
    EXPECT_TRUE(c.allows(ix.tokenize_greedy(",")[0]));
    c.rollback(start);
    EXPECT_EQ(c.forced_text(64), "[{\"label\":\"");

    // A clone advances on its own.
    Constraint copy = c.clone();
    accept_text(copy, ix, "[{");
    EXPECT_EQ(copy.forced_text(64), "\"label\":\"");
    EXPECT_EQ(c.forced_text(64), "[{\"label\":\"");
}

TEST(Constraint, FullMaskAgreesWithSingleTokenChecks) {
    auto       model = fixtures::shared_model("tiny.gguf");
    const auto & ix  = tiny_index();
    Constraint c(model->vocab_index(), k_bbox_gbnf);
    accept_text(c, ix, "[{\"label\":\"ca");
    const int32_t                 n = llama_vocab_n_tokens(model->vocab());
    std::vector<llama_token_data> cur(static_cast<size_t>(n));
    for (llama_token t = 0; t < n; ++t) cur[size_t(t)] = {t, 0.0f, 0.0f};
    llama_token_data_array arr{cur.data(), cur.size(), -1, false};
    c.apply(arr);
    int legal = 0;
    for (llama_token t = 0; t < n; t += 7) { // every 7th token: the single checks are the slow part here
        const bool masked_in = !std::isinf(cur[size_t(t)].logit);
        EXPECT_EQ(masked_in, c.allows(t)) << "token " << t << " '" << model->token_piece(t) << "'";
        legal += masked_in;
    }
    EXPECT_GT(legal, 0);
    EXPECT_LT(legal, n / 7 / 2);
}

// llama.cpp's grammar takes an encoded surrogate as a character; the constraint does not,
// so a string's length in the answer is the length the grammar counted.
TEST(Constraint, RefusesInvalidUtf8TheGrammarWouldTake) {
    auto         model = fixtures::shared_model("tiny.gguf");
    const auto & ix    = tiny_index();
    const auto   byte  = [&](unsigned char b) { return ix.byte_token(b); };
    ASSERT_GE(byte(0xED), 0);
    ASSERT_GE(byte(0xA0), 0);
    Constraint c(model->vocab_index(), R"(root ::= "\"" [^"]{1,3} "\"")");
    accept_text(c, ix, "\"");
    ASSERT_TRUE(c.allows(byte(0xED)));
    c.accept(byte(0xED));
    EXPECT_FALSE(c.allows(byte(0xA0))) << "ED A0 .. encodes a surrogate";
    EXPECT_TRUE(c.allows(byte(0x9F)));
    EXPECT_EQ(c.forced_text(64), ""); // mid-character: nothing to probe
    // The same verdict through the full mask and legal_top.
    std::vector<llama_token_data> cur{{byte(0xA0), 1.0f, 0.0f}, {byte(0x9F), 0.5f, 0.0f}};
    llama_token_data_array        arr{cur.data(), cur.size(), -1, false};
    c.apply(arr);
    EXPECT_TRUE(std::isinf(cur[0].logit));
    EXPECT_FALSE(std::isinf(cur[1].logit));
    std::vector<llama_token_data> cur2{{byte(0xA0), 1.0f, 0.0f}, {byte(0x9F), 0.5f, 0.0f}};
    llama_token_data_array        arr2{cur2.data(), cur2.size(), -1, false};
    EXPECT_EQ(c.best_legal(arr2), byte(0x9F));
    EXPECT_EQ(c.legal_prefix(std::vector<llama_token>{byte(0x9F), byte(0xBF)}), 2u);
    EXPECT_EQ(c.legal_prefix(std::vector<llama_token>{byte(0xA0)}), 0u);
    const auto snap = c.snapshot();
    c.accept(byte(0x9F));
    c.accept(byte(0xBF)); // U+D7FF
    EXPECT_FALSE(c.allows(byte(0xBF)));
    c.rollback(snap);
    EXPECT_TRUE(c.allows(byte(0x9F)));
}

// legal_top(k) equals masking the whole vocabulary and then keeping the k best, at states
// where few tokens are legal (after a digit) and where most are (inside a label).
TEST(Constraint, LegalTopEqualsFullMaskThenTopK) {
    auto          model = fixtures::shared_model("tiny.gguf");
    const auto &  ix    = tiny_index();
    const int32_t n     = llama_vocab_n_tokens(model->vocab());
    uint64_t      rng   = 12345;
    const auto    next  = [&] {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        return static_cast<float>(rng % 1000) / 100.0f; // coarse: ties happen, and must break by id
    };
    for (const std::string prefix : {"[{\"label\":\"ca", "[{\"label\":\"cat\",\"bbox\":[1", "["}) {
        Constraint c(model->vocab_index(), k_bbox_gbnf);
        accept_text(c, ix, prefix);
        for (size_t k : {1, 5, 40, 300, 5000}) {
            std::vector<llama_token_data> logits(static_cast<size_t>(n));
            for (llama_token t = 0; t < n; ++t) logits[size_t(t)] = {t, next(), 0.0f};

            auto                   full = logits;
            llama_token_data_array all{full.data(), full.size(), -1, false};
            c.apply(all);
            std::vector<llama_token_data> expected;
            for (const auto & d : full) {
                if (!std::isinf(d.logit)) expected.push_back(d);
            }
            std::sort(expected.begin(), expected.end(), [](const auto & a, const auto & b) {
                return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
            });
            if (expected.size() > k) expected.resize(k);

            auto                   fast = logits;
            llama_token_data_array arr{fast.data(), fast.size(), -1, false};
            ASSERT_EQ(c.legal_top(arr, k), expected.size()) << prefix << " k=" << k;
            for (size_t i = 0; i < expected.size(); ++i) {
                EXPECT_EQ(arr.data[i].id, expected[i].id) << prefix << " k=" << k << " i=" << i;
                EXPECT_EQ(arr.data[i].logit, expected[i].logit);
            }
            auto                   again = logits;
            llama_token_data_array one{again.data(), again.size(), -1, false};
            EXPECT_EQ(c.best_legal(one), expected[0].id);
        }
    }
}

// The speller spells forced text the way the target did before, else by longest match.
TEST(ForcedSpeller, FollowsTheTargetsChoices) {
    auto          model = fixtures::shared_model("tiny.gguf");
    const auto &  ix    = tiny_index();
    ForcedSpeller speller(*model);
    const std::string text = "\",\"bbox\":[";
    const llama_token prev = ix.longest_prefix_token("cat");
    EXPECT_EQ(speller.spell(prev, text, 16), ix.tokenize_greedy(text));
    EXPECT_EQ(speller.spell(prev, text, 1).size(), 1u);

    // The target chose '"' then ',' where the longest match would take more at once.
    const llama_token quote = ix.longest_prefix_token("\"");
    const llama_token comma = ix.longest_prefix_token(",");
    ASSERT_EQ(model->token_piece(quote), "\"");
    speller.learn(prev, text, quote);
    speller.learn(quote, text.substr(1), comma);
    const auto spelled = speller.spell(prev, text, 16);
    ASSERT_GE(spelled.size(), 3u);
    EXPECT_EQ(spelled[0], quote);
    EXPECT_EQ(spelled[1], comma);
    std::string joined;
    for (llama_token t : spelled) joined += model->token_piece(t);
    EXPECT_EQ(joined, text);
    // Another previous token: no memory there.
    EXPECT_EQ(speller.spell(comma, text, 16), ix.tokenize_greedy(text));

    // A choice that ran past the forced text ends the spelling with it.
    const llama_token bracket_digit = ix.longest_prefix_token("[1");
    if (model->token_piece(bracket_digit) == "[1") {
        speller.learn(prev, "[", bracket_digit);
        EXPECT_EQ(speller.spell(prev, "[", 16), std::vector<llama_token>{bracket_digit});
    }
}

// The forced structure is proposed as drafts, the draft model drafts the free parts under
// the grammar, and the answer is the one decoding without any drafts gives.
TEST(GrammarSpeculation, ForcedTextAndModelDraftsKeepOutputIdentical) {
    auto    target = fixtures::shared_model("pair-target.gguf");
    auto    draft  = fixtures::shared_model("pair-draft.gguf");
    Session plain(target, ctx());
    Session spec(target, ctx(), draft);
    const auto tokens = target->tokenize("List the objects:", true, true);
    auto       off    = constrained(200, std::nullopt);
    off.draft_num_predict = 0; // no drafting at all, forced text included
    const auto a = fixtures::generate(plain, tokens, off);
    EXPECT_EQ(a.result.grammar_drafts.forced, 0);
    EXPECT_EQ(a.result.speculation.drafted, 0);
    EXPECT_EQ(a.result.reason, DoneReason::stop) << a.text;

    for (std::optional<int> k : {std::optional<int>(), std::optional<int>(1), std::optional<int>(4)}) {
        const auto b = fixtures::generate(spec, tokens, constrained(200, k));
        EXPECT_EQ(b.text, a.text) << "k=" << k.value_or(-1);
        EXPECT_EQ(b.result.context, a.result.context);
        const auto & g = b.result.grammar_drafts;
        EXPECT_LE(g.forced_accepted, g.forced);
        // The adaptive plan depends on measured times and what earlier requests taught it;
        // a fixed depth verifies forced text every round.
        if (!k) continue;
        EXPECT_GT(g.forced, 10) << "three items of fixed structure";
        EXPECT_GT(g.forced_accepted, 0);
        EXPECT_LT(b.result.speculation.rounds, a.result.speculation.rounds) << "drafts save target steps";
        EXPECT_GT(b.result.speculation.drafted, 0) << "k=" << *k;
        EXPECT_GT(b.result.speculation.accepted, 0) << "k=" << *k;
    }
    // The same session without speculation in the request: nothing proposed.
    const auto c = fixtures::generate(spec, tokens, off);
    EXPECT_EQ(c.text, a.text);
    EXPECT_EQ(c.result.grammar_drafts.forced, 0);
    EXPECT_EQ(c.result.speculation.drafted, 0);
}

// Prompt lookup knows no grammar: its runs are cut at the first illegal token, and what
// survives is drafted and verified.
TEST(GrammarSpeculation, PromptLookupDraftsUnderTheGrammar) {
    auto    model = fixtures::shared_model("tiny.gguf");
    Session plain(model, ctx());
    Session lookup(model, ctx()); // no draft model: prompt lookup only
    const auto tokens = model->tokenize(
        "Example: [{\"label\":\"cat\",\"bbox\":[1,2,3,4]},{\"label\":\"dog\",\"bbox\":[5,6,7,8]},"
        "{\"label\":\"a b c\",\"bbox\":[1,2,3,4]}] Now list the objects:",
        true, true);
    auto off              = constrained(200, std::nullopt);
    off.draft_num_predict = 0;
    const auto a          = fixtures::generate(plain, tokens, off);
    const auto b          = fixtures::generate(lookup, tokens, constrained(200, 4));
    EXPECT_EQ(b.text, a.text);
    EXPECT_GT(b.result.speculation.drafted, 0);
    const auto & g = b.result.grammar_drafts;
    EXPECT_GT(g.truncated_tokens, 0) << "the example's spaces are illegal in the label";
    EXPECT_GT(g.truncated_rounds + g.no_legal_draft, 0);
}

// With sampling, a forced token is a draft drawn from a point mass: accepted with the
// target's probability of it, else the target's residual is drawn. The token at the first
// forced position must have the same distribution with and without forced drafts.
TEST(GrammarSpeculation, SampledForcedTokensKeepTheDistribution) {
    auto    target = fixtures::shared_model("pair-target.gguf");
    Session plain(target, ctx(128));
    Session spec(target, ctx(128));
    const auto tokens = target->tokenize("Hello", true, true);
    // After "x" the text " the quick" is forced, and several tokens spell its start.
    const std::string gbnf = R"(root ::= "x" " the quick" [0-9])";

    constexpr int n_seeds = 500;
    std::map<llama_token, std::array<int, 2>> counts;
    int64_t forced = 0;
    for (int seed = 0; seed < n_seeds; ++seed) {
        for (int mode = 0; mode < 2; ++mode) {
            GenerateOptions o;
            o.grammar              = gbnf;
            o.num_predict          = 3;
            o.sampling.temperature = 3.0f;
            o.sampling.top_k       = 0;
            o.sampling.top_p       = 1.0f;
            o.sampling.seed        = 7000 + seed;
            o.draft_num_predict    = mode == 0 ? 0 : -1;
            if (mode == 1) o.draft_fixed_k = 1; // forced text every round, whatever was learned
            const auto out = fixtures::generate(mode == 0 ? plain : spec, tokens, o);
            ASSERT_GE(out.result.context.size(), tokens.size() + 2);
            ++counts[out.result.context[tokens.size() + 1]][mode];
            if (mode == 1) forced += out.result.grammar_drafts.forced;
        }
    }
    ASSERT_GE(forced, n_seeds);
    ASSERT_GE(counts.size(), 2u) << "more than one spelling of the forced text's start";
    double x2 = 0.0;
    int    cells = 0;
    for (const auto & [token, c] : counts) {
        const double expected = (c[0] + c[1]) / 2.0;
        if (expected < 5) continue;
        ++cells;
        for (int m = 0; m < 2; ++m) x2 += (c[m] - expected) * (c[m] - expected) / expected;
    }
    ASSERT_GE(cells, 2);
    const int    dof = cells - 1;
    const double z = 3.09, h = 2.0 / (9.0 * dof);
    EXPECT_LT(x2, dof * std::pow(1.0 - h + z * std::sqrt(h), 3.0));
}
