#include "engine/layer_placement.h"

#include <gtest/gtest.h>

#include <stdexcept>

using specd::engine::parse_tensor_split;

// SPECD_TENSOR_SPLIT reads as llama-server's --tensor-split: proportions per offload device.
TEST(LayerPlacement, ReadsATensorSplit) {
    EXPECT_EQ(parse_tensor_split("3,1"), (std::vector<float>{3.0f, 1.0f}));
    EXPECT_EQ(parse_tensor_split("0.5"), (std::vector<float>{0.5f}));
    EXPECT_EQ(parse_tensor_split("0,1,0"), (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

TEST(LayerPlacement, RefusesASplitThatPlacesNothing) {
    for (const char * bad : {"", ",", "0", "0,0", "-1,2", "1,,2", "a,1", "1x", "nan", "inf", "1e7"}) {
        EXPECT_THROW(parse_tensor_split(bad), std::invalid_argument) << bad;
    }
    std::string many = "1";
    for (size_t i = 0; i < llama_max_devices(); ++i) many += ",1";
    EXPECT_THROW(parse_tensor_split(many), std::invalid_argument);
}
