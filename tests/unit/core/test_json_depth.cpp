#include "core/json_depth.h"

#include <gtest/gtest.h>

using specd::json_nesting_depth;

TEST(JsonDepth, CountsBracketsOutsideStrings) {
    EXPECT_EQ(json_nesting_depth("1"), 0);
    EXPECT_EQ(json_nesting_depth("{}"), 1);
    EXPECT_EQ(json_nesting_depth(R"({"a":[1,{"b":[]}],"c":{}})"), 4);
    EXPECT_EQ(json_nesting_depth(R"({"a":"[[[{{{"})"), 1);        // brackets in a string
    EXPECT_EQ(json_nesting_depth(R"({"a":"\"[[[","b":[1]})"), 2); // an escaped quote stays in the string
    EXPECT_EQ(json_nesting_depth(std::string(100000, '[')), 100000); // unparsed, unclosed
}
