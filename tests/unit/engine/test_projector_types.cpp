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
