// A prompt far over the context is tokenized only at its two ends (engine/prompt_ends.h):
// what truncation keeps must be exactly what it keeps of the whole text's tokens, on every
// vocabulary file of the pinned llama.cpp (SPM, BPE with each pre-tokenizer there, and the
// kinds that are never cut), for texts full of the places where a cut could go wrong.
#include "core/error.h"
#include "engine/prompt_ends.h"
#include "engine/session.h"
#include "engine/text_cutter.h"
#include "fixtures.h"

#include <gtest/gtest.h>

#include <random>

using namespace specd;
using namespace specd::engine;

namespace {

std::filesystem::path vocab_file(const std::string & name) {
    return std::filesystem::path(SPECD_LLAMA_MODELS) / ("ggml-vocab-" + name + ".gguf");
}

std::shared_ptr<Model> load_vocab(const std::string & name) {
    ModelLoadOptions opts;
    opts.vocab_only = true;
    return Model::load(vocab_file(name), opts);
}

// Words, numbers, other scripts, whitespace runs and special-token spellings, joined every
// way: next to spaces and line breaks, and glued to words.
std::string mixed_text(size_t bytes, unsigned seed) {
    static const char * words[] = {"hello", "world", "The", "quick", "don't", "it's", "x86_64", "3.14159",
                                   "1,234,567", "foo_bar", "camelCase", "https://a.b/c?d=e", "Ünïcödé", "日本語",
                                   "καλημέρα", "naïve", "(x)", "{\"k\":", "[1,2]", "a", "I", "--", "...", "#!", "é"};
    static const char * seps[]  = {" ", " ", " ", "\n", " ", "\n\n", "  ", "\t", " \n", "\n    ", ".\n", ", ",
                                   "; ", "\r\n", "\n", "   ", "\u00a0", "\u3000"};
    static const char * specials[] = {"<|im_start|>", "<|im_end|>", "<|user|>", "<|end|>", "<s>", "</s>",
                                      "<start_of_turn>", "<|endoftext|>", "<unk>", "<|assistant|>", "<fim_prefix>",
                                      "<|begin_of_text|>", "[INST]"};
    std::mt19937 rng(seed);
    std::string  text;
    while (text.size() < bytes) {
        const unsigned r = rng() % 100;
        if (r < 4) text += specials[rng() % std::size(specials)];
        else text += words[rng() % std::size(words)];
        if (rng() % 10 != 0) text += seps[rng() % std::size(seps)];
    }
    return text;
}

struct VocabCase {
    const char * name;
    bool         cut; // the vocabulary can be cut (else long texts are tokenized whole)
};

// One vocabulary of each tokenizer kind, and of each BPE pre-tokenizer family (their
// regexes differ in how they treat whitespace, digits and line breaks).
const VocabCase k_vocabs[] = {
    {"llama-spm", true}, {"phi-3", true},                                        // SPM
    {"gpt-2", true}, {"llama-bpe", true}, {"qwen2", true}, {"qwen35", true},     // BPE
    {"gemma-4", true}, {"deepseek-llm", true}, {"deepseek-coder", true}, {"falcon", true}, {"starcoder", true},
    {"bert-bge", false},                                                          // WPM: never cut
};

// Every third cut found in a text: the head's tokens then the tail's are the whole text's.
void expect_cuts_exact(const Model & model, const std::string & name) {
    const std::string  text   = mixed_text(3000, 7);
    const TextCutter & cutter = model.text_cutter();
    const bool         eos    = llama_vocab_get_add_eos(model.vocab());
    const auto         whole  = model.tokenize(text, true, true);
    int                cuts   = 0;
    for (auto cut = cutter.first_cut(text, 0, text.size()); cut; cut = cutter.first_cut(text, cut->head_end + 1, text.size())) {
        if (++cuts % 3 != 0) continue;
        auto       pieces = model.tokenize(std::string_view(text).substr(0, cut->head_end), true, true);
        const auto tail   = model.tokenize(std::string_view(text).substr(cut->tail_begin), false, true);
        if (eos) pieces.pop_back();
        pieces.insert(pieces.end(), tail.begin(), tail.end());
        if (eos) pieces.push_back(llama_vocab_eos(model.vocab()));
        ASSERT_EQ(pieces, whole) << name << ": cut at " << cut->head_end << " ["
                                 << text.substr(cut->head_end > 8 ? cut->head_end - 8 : 0, 16) << "]";
    }
    EXPECT_GT(cuts, 20) << name;
}

// What truncation keeps of the ends equals what it keeps of the whole, for prompts (both
// ends, special tokens parsed) and embedding inputs (the beginning).
void expect_truncation_exact(const Model & model, const std::string & name, bool cut) {
    const std::string text  = mixed_text(60'000, 11);
    const auto        whole = model.tokenize(text, true, true);
    for (const auto [n_ctx, keep] : {std::pair{256, 4}, {2048, 4}, {512, 100}, {1024, 0}}) {
        const EndTokens ends = tokenize_ends(model, text, true, true, ends_kept(n_ctx, keep));
        EXPECT_EQ(ends.elided, cut) << name;
        EXPECT_GE(ends.tokens.size(), size_t(n_ctx)) << name;
        EXPECT_EQ(truncate_prompt(ends.tokens, n_ctx, keep), truncate_prompt(whole, n_ctx, keep))
            << name << ", n_ctx " << n_ctx << ", num_keep " << keep;
    }
    const auto      raw  = model.tokenize(text, true, false);
    const EndTokens head = tokenize_ends(model, text, true, false, {513, 0});
    ASSERT_GT(head.tokens.size(), 512u) << name;
    EXPECT_TRUE(std::equal(head.tokens.begin(), head.tokens.begin() + 512, raw.begin())) << name;
}

} // namespace

TEST(PromptEnds, ExactOnEveryTokenizerKind) {
    for (const auto & v : k_vocabs) {
        const auto model = load_vocab(v.name);
        EXPECT_EQ(model->text_cutter().can_cut(), v.cut) << v.name;
        if (v.cut) expect_cuts_exact(*model, v.name);
        expect_truncation_exact(*model, v.name, v.cut);
    }
}

// A text with nowhere to cut is read whole up to the limit, and refused above it with a
// message that names the limit; the cancel flag stops the work between windows.
TEST(PromptEnds, UncuttableTextsAreBoundedAndCancelStops) {
    const auto model = fixtures::shared_model("tiny.gguf"); // phi-3: cut at spaces
    const EndsNeeded need = ends_kept(4096, 4);

    const std::string no_spaces(k_max_whole_text_bytes / 2, 'x');
    EXPECT_FALSE(tokenize_ends(*model, no_spaces, true, true, need).elided);

    const std::string too_long(max_whole_text_bytes(need) + 1, 'x');
    try {
        tokenize_ends(*model, too_long, true, true, need);
        FAIL() << "expected a bad_request";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        EXPECT_NE(std::string(e.what()).find("1.0 MiB"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("space between words"), std::string::npos) << e.what();
    }

    std::string words;
    while (words.size() < (8u << 20)) words += "many words in a very long prompt ";
    const EndTokens ends = tokenize_ends(*model, words, true, true, need);
    EXPECT_TRUE(ends.elided);
    EXPECT_LT(ends.tokens.size(), 3u * 4096);

    std::atomic<bool> cancel{true};
    try {
        tokenize_ends(*model, words, true, true, need, &cancel);
        FAIL() << "expected cancelled";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::cancelled);
    }
}
