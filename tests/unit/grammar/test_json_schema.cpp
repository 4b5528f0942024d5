#include "grammar/json_schema.h"

#include "core/error.h"

#include <gtest/gtest.h>

using namespace specd::grammar;

TEST(JsonSchema, CompleteJsonDetection) {
    EXPECT_TRUE(is_complete_json("{}"));
    EXPECT_TRUE(is_complete_json(" {\"a\": [1, 2]}\n"));
    EXPECT_TRUE(is_complete_json("[1]"));
    EXPECT_FALSE(is_complete_json("{\"a\": [1, 2]"));
    EXPECT_FALSE(is_complete_json("{\"a\": \"}\""));
    EXPECT_FALSE(is_complete_json(""));
    EXPECT_FALSE(is_complete_json("{} {}"));
}

TEST(JsonSchema, SchemasBecomeGrammars) {
    const auto g = schema_to_grammar(R"({"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]})");
    EXPECT_NE(g.find("root"), std::string::npos);
    EXPECT_NE(json_object_grammar().find("root"), std::string::npos);
}

TEST(JsonSchema, BrokenSchemaIsABadRequest) {
    try {
        schema_to_grammar(R"({"type":"object","properties":{"a":{"$ref":"#/definitions/missing"}}})");
        SUCCEED(); // the converter may accept an unresolved ref as "any"; it must not crash
    } catch (const specd::Error & e) {
        EXPECT_EQ(e.kind(), specd::ErrorKind::bad_request);
    }
    EXPECT_THROW(schema_to_grammar("not json"), specd::Error);
}
