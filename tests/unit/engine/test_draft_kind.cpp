// What a DRAFT GGUF is, told from its architecture, and when a head cannot draft for a model.
#include "engine/draft_kind.h"

#include <gtest/gtest.h>

using namespace specd::engine;

namespace {

GgufInfo info(std::string arch, std::vector<std::pair<std::string, int64_t>> ints) {
    GgufInfo g;
    g.architecture = std::move(arch);
    for (auto & [k, v] : ints) g.metadata.push_back({k, v});
    return g;
}

GgufInfo gemma4(int64_t width) {
    return info("gemma4", {{"gemma4.embedding_length", width}, {"gemma4.attention.head_count_kv", 2},
                           {"gemma4.attention.key_length", 16}});
}

GgufInfo assistant(int64_t hidden, int64_t kv_heads = 2) {
    return info("gemma4-assistant", {{"gemma4-assistant.embedding_length", 96},
                                     {"gemma4-assistant.embedding_length_out", hidden},
                                     {"gemma4-assistant.attention.head_count_kv", kv_heads},
                                     {"gemma4-assistant.attention.key_length", 16}});
}

} // namespace

TEST(DraftKind, ToldFromTheArchitecture) {
    EXPECT_EQ(draft_kind_of("llama"), DraftKind::model);
    EXPECT_EQ(draft_kind_of("gemma4"), DraftKind::model);
    EXPECT_EQ(draft_kind_of("gemma4-assistant"), DraftKind::gemma4_assistant);
    EXPECT_EQ(draft_kind_of("eagle3"), DraftKind::eagle3);
    EXPECT_EQ(draft_kind_of("dflash"), DraftKind::dflash);
    EXPECT_EQ(draft_kind_name(DraftKind::model), "draft-model");
    EXPECT_EQ(draft_kind_name(DraftKind::gemma4_assistant), "gemma4-assistant");
    EXPECT_FALSE(is_head(DraftKind::model));
    EXPECT_TRUE(is_head(DraftKind::gemma4_assistant));
}

TEST(DraftKind, AnAssistantDraftsForAGemma4OfItsWidth) {
    EXPECT_EQ(draft_refusal(gemma4(64), assistant(64)), "");
    EXPECT_NE(draft_refusal(gemma4(64), assistant(128)).find("hidden size of 128, the model's is 64"), std::string::npos);
    EXPECT_NE(draft_refusal(gemma4(64), assistant(64, 4)).find("KV cache"), std::string::npos);
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 64}}), assistant(64)).find("gemma4 models only"),
              std::string::npos);
}

TEST(DraftKind, ADraftModelIsLeftToTheVocabularyCheck) {
    EXPECT_EQ(draft_refusal(gemma4(64), info("llama", {})), "");
}

TEST(DraftKind, AnEagle3HeadDraftsForAModelOfItsWidthWhoseLayersCanBeRead) {
    const GgufInfo head = info("eagle3", {{"eagle3.target_hidden_size", 64}});
    EXPECT_EQ(draft_refusal(info("llama", {{"llama.embedding_length", 64}}), head), "");
    EXPECT_EQ(draft_refusal(gemma4(64), head), "");
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 128}}), head).find("hidden size of 64, the model's is 128"),
              std::string::npos);
    // phi3's graph hands out no layer inputs: libllama would abort the process.
    EXPECT_NE(draft_refusal(info("phi3", {{"phi3.embedding_length", 64}}), head).find("cannot read the layers of a phi3"),
              std::string::npos);
    // The layers it reads, when the header was read with its arrays' values.
    GgufInfo reads = head;
    reads.metadata.push_back({"eagle3.target_layers", MetaEntry::Array{"INT32", 3, {int64_t(0), int64_t(2), int64_t(3)}}});
    EXPECT_EQ(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 4}}), reads), "");
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 2}}), reads)
                  .find("reads layer 3, the model has 2"),
              std::string::npos);
    EXPECT_TRUE(has_own_cache(DraftKind::eagle3));
    EXPECT_FALSE(has_own_cache(DraftKind::gemma4_assistant));
    EXPECT_EQ(draft_ubatch(DraftKind::eagle3, 4, 512), 64);
    EXPECT_EQ(draft_ubatch(DraftKind::eagle3, 100, 2000), 100);
    EXPECT_EQ(draft_ubatch(DraftKind::eagle3, 1, 20), 21); // a decode's tokens and a bridge
    EXPECT_EQ(draft_ubatch(DraftKind::gemma4_assistant, 4, 512), 4);
    EXPECT_EQ(draft_ubatch(DraftKind::model, 4, 512), 512);
}

// DFlash reads the inputs of some of the target's layers as EAGLE3 does, each as wide as its
// own layers; the target's count itself (its final hidden state) is not one it can read.
TEST(DraftKind, ADFlashHeadFitsAModelOfItsWidthWhoseLayersItReads) {
    GgufInfo head = info("dflash", {{"dflash.embedding_length", 64}});
    head.metadata.push_back({"dflash.target_layers", MetaEntry::Array{"INT32", 3, {int64_t(0), int64_t(1), int64_t(3)}}});
    EXPECT_EQ(draft_kind_of("dflash"), DraftKind::dflash);
    EXPECT_EQ(draft_kind_name(DraftKind::dflash), "dflash");
    EXPECT_TRUE(has_own_cache(DraftKind::dflash));
    EXPECT_EQ(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 4}}), head), "");
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 128}, {"llama.block_count", 4}}), head)
                  .find("the dflash head was made for a hidden size of 64, the model's is 128"),
              std::string::npos);
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 3}}), head)
                  .find("the dflash head reads layer 3, the model has 3"),
              std::string::npos);
    EXPECT_NE(draft_refusal(info("qwen2vl", {{"qwen2vl.embedding_length", 64}}), head)
                  .find("a dflash head cannot read the layers of a qwen2vl model"),
              std::string::npos);
    EXPECT_EQ(draft_ubatch(DraftKind::dflash, 4, 512), 64);
    // Its variants that draft otherwise are refused by name.
    GgufInfo dflash2 = head;
    dflash2.tensors.push_back({.name = "selector_hidden.weight"});
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 4}}), dflash2).find("DFlash2"),
              std::string::npos);
    GgufInfo dspark = head;
    dspark.tensors.push_back({.name = "markov_w1.weight"});
    EXPECT_NE(draft_refusal(info("llama", {{"llama.embedding_length", 64}, {"llama.block_count", 4}}), dspark).find("DSpark"),
              std::string::npos);
}

// A model without a DRAFT drafts with its own MTP layer when it carries exactly one and the
// pinned llama.cpp runs it for that architecture.
TEST(DraftKind, AModelsOwnMtpLayerDraftsForIt) {
    EXPECT_EQ(builtin_draft_kind(info("glm4moe", {{"glm4moe.nextn_predict_layers", 1}})), DraftKind::mtp);
    EXPECT_EQ(builtin_draft_kind(info("qwen35", {{"qwen35.nextn_predict_layers", 1}})), DraftKind::mtp);
    EXPECT_EQ(draft_kind_name(DraftKind::mtp), "mtp");
    EXPECT_TRUE(is_head(DraftKind::mtp));
    EXPECT_TRUE(has_own_cache(DraftKind::mtp));
    // No layer, a chain of them, or an architecture that keeps them without running them.
    EXPECT_EQ(builtin_draft_kind(info("glm4moe", {})), std::nullopt);
    EXPECT_EQ(builtin_draft_kind(info("glm4moe", {{"glm4moe.nextn_predict_layers", 0}})), std::nullopt);
    EXPECT_EQ(builtin_draft_kind(info("step35", {{"step35.nextn_predict_layers", 3}})), std::nullopt);
    EXPECT_EQ(builtin_draft_kind(info("glm4", {{"glm4.nextn_predict_layers", 1}})), std::nullopt);
    EXPECT_EQ(builtin_draft_kind(info("llama", {{"llama.nextn_predict_layers", 1}})), std::nullopt);
}
