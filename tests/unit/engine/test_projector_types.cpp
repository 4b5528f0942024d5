#include "engine/projector_types.h"

#include <gtest/gtest.h>

using specd::engine::projector_type_refusal;
using specd::engine::served_projector_types;

TEST(ProjectorTypes, ServesTheTypesWithAFixture) {
    EXPECT_EQ(projector_type_refusal("gemma3"), "");
    EXPECT_EQ(projector_type_refusal("gemma4v"), "");
    EXPECT_EQ(projector_type_refusal("qwen2.5vl_merger"), "");
    EXPECT_EQ(projector_type_refusal("qwen2vl_merger"), "");
    EXPECT_EQ(served_projector_types(), "gemma3, gemma4v, qwen2.5vl_merger, qwen2vl_merger");
}

// Types the pinned mtmd knows but specd has not tested are refused by name.
TEST(ProjectorTypes, RefusesOthersByName) {
    const std::string why = projector_type_refusal("llama4");
    EXPECT_NE(why.find("'llama4'"), std::string::npos) << why;
    EXPECT_NE(why.find("gemma3, gemma4v, qwen2.5vl_merger, qwen2vl_merger"), std::string::npos) << why;
    EXPECT_NE(projector_type_refusal("qwen3vl_merger"), ""); // Qwen3-VL's: no fixture yet
    EXPECT_NE(projector_type_refusal("Gemma3"), ""); // exact names, as mtmd matches them
    EXPECT_NE(projector_type_refusal("").find("without clip.projector_type"), std::string::npos);
}

// glm4 and glm4moe graphs stop the process on image embeddings unless they have M-RoPE
// sections (GLM-4V's); other text models take them.
TEST(ProjectorTypes, TextModelsWhoseGraphCannotTakeImagesAreNamed) {
    specd::engine::GgufInfo glm;
    glm.architecture = "glm4moe";
    EXPECT_NE(specd::engine::projector_text_refusal(glm).find("a glm4moe model without M-RoPE sections cannot take images"),
              std::string::npos);
    glm.metadata.push_back({"glm4moe.rope.dimension_sections", specd::engine::MetaEntry::Array{"INT32", 4, {}}});
    EXPECT_EQ(specd::engine::projector_text_refusal(glm), "");
    specd::engine::GgufInfo llama;
    llama.architecture = "llama";
    EXPECT_EQ(specd::engine::projector_text_refusal(llama), "");
}
