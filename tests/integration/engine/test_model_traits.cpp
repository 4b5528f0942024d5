// /api/show's "embedding" and "insert" capabilities come from these traits: checked on the
// generated tiny model and on llama.cpp's vocabulary files of a BERT embedding model and a
// FIM-trained coder (starcoder).
#include "core/error.h"
#include "engine/model_traits.h"
#include "fixtures.h"

#include <gtest/gtest.h>

using namespace specd::engine;
using specd::fixtures::fixture;

TEST(ModelTraits, FromTheHeaderAndTheVocabulary) {
    const struct {
        const char * file;
        bool         embedding;
        bool         fim;
    } cases[] = {
        {"tiny.gguf", false, false},            // phi-3 vocab: no FIM tokens, causal, no pooling
        {"tiny-spm.gguf", false, false},
        {"vocab-bert-bge.gguf", true, false},   // bert.attention.causal = false
        {"vocab-starcoder.gguf", false, true},  // <fim_prefix>, <fim_suffix>
    };
    for (const auto & c : cases) {
        const ModelTraits t = read_model_traits(fixture(c.file));
        EXPECT_EQ(t.embedding, c.embedding) << c.file;
        EXPECT_EQ(t.fill_in_middle, c.fim) << c.file;
    }
}

TEST(ModelTraits, NotAGgufIsABadRequest) {
    try {
        read_model_traits(fixture("does-not-exist.gguf"));
        FAIL();
    } catch (const specd::Error & e) {
        EXPECT_EQ(e.kind(), specd::ErrorKind::bad_request);
    }
}
