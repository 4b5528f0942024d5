#include "models/parameters.h"

#include <gtest/gtest.h>

using namespace specd::models;
using nlohmann::json;

TEST(Parameters, UnknownNamesAreNamed) {
    Parameters p;
    EXPECT_EQ(p.set("num_gqa", "1"), "unknown parameter: num_gqa");
    EXPECT_EQ(p.set("mirostat", "3"), "invalid value for parameter mirostat: must be between 0 and 2");
    EXPECT_EQ(p.set_json("low_vram", true), "unknown parameter: low_vram");
    EXPECT_FALSE(p.set("num_gpu", "-1")); // Ollama's placement parameters (docs/gpu.md)
    EXPECT_EQ(p.num_gpu, -1);
    EXPECT_FALSE(p.set("main_gpu", "1"));
    EXPECT_EQ(p.set("num_gpu", "-2"), "invalid value for parameter num_gpu: must be between -1 and 100000");
    EXPECT_TRUE(is_known_parameter("draft_num_predict"));
    EXPECT_FALSE(is_known_parameter("Temperature")); // callers lowercase Modelfile names
}

TEST(Parameters, JsonRoundTrip) {
    Parameters p;
    ASSERT_FALSE(p.set("temperature", "0.7"));
    ASSERT_FALSE(p.set("num_ctx", "4096"));
    ASSERT_FALSE(p.set("seed", "-1"));
    ASSERT_FALSE(p.set("stop", "<|im_end|>"));
    ASSERT_FALSE(p.set("stop", "\n\n"));
    const json j = to_json(p);
    EXPECT_EQ(j.dump(), R"({"num_ctx":4096,"seed":-1,"stop":["<|im_end|>","\n\n"],"temperature":0.7})");
    EXPECT_EQ(parameters_from_json(j), p);
    EXPECT_EQ(to_json(Parameters{}), json::object());
    EXPECT_TRUE(Parameters{}.empty());
    EXPECT_FALSE(p.empty());
}

TEST(Parameters, JsonTypes) {
    struct Case {
        const char * name;
        json         value;
        bool         ok;
    };
    const Case cases[] = {
        {"num_ctx", 2048, true},
        {"num_ctx", 2048.0, true}, // clients send floats for integers
        {"num_ctx", 2048.5, false},
        {"num_ctx", "2048", false},
        {"num_ctx", 0, false},
        {"num_ctx", 1e12, false},
        {"num_ctx", json::array(), false},
        {"temperature", 1, true},
        {"temperature", 0.2, true},
        {"temperature", -0.1, false},
        {"temperature", true, false},
        {"top_p", 1.01, false},
        {"seed", 9007199254740993LL, true},
        {"seed", 18446744073709551615ULL, false},
        {"stop", "x", true},
        {"stop", json::array({"a", "b"}), true},
        {"stop", json::array({"a", 1}), false},
        {"stop", json::array({""}), false},
        {"stop", 3, false},
    };
    for (const auto & c : cases) {
        Parameters p;
        EXPECT_EQ(!p.set_json(c.name, c.value).has_value(), c.ok) << c.name << " = " << c.value.dump();
    }
    Parameters p;
    ASSERT_FALSE(p.set_json("seed", 9007199254740993LL));
    EXPECT_EQ(p.seed, 9007199254740993LL); // no detour through double
}

TEST(Parameters, FromJsonRejectsUnknownAndBad) {
    EXPECT_THROW(parameters_from_json(json::array()), std::invalid_argument);
    EXPECT_THROW(parameters_from_json(json{{"bogus", 1}}), std::invalid_argument);
    EXPECT_THROW(parameters_from_json(json{{"top_k", "many"}}), std::invalid_argument);
}

TEST(Parameters, MergeOverrides) {
    Parameters base;
    base.temperature = 0.5;
    base.num_ctx     = 1024;
    base.stop        = {"a"};
    Parameters over;
    over.temperature = 0.9;
    over.top_k       = 10;
    base.merge_from(over);
    EXPECT_EQ(base.temperature, 0.9);
    EXPECT_EQ(base.num_ctx, 1024);
    EXPECT_EQ(base.top_k, 10);
    EXPECT_EQ(base.stop, (std::vector<std::string>{"a"})); // an empty stop list does not clear
    over.stop = {"b", "c"};
    base.merge_from(over);
    EXPECT_EQ(base.stop, (std::vector<std::string>{"b", "c"}));
}

TEST(Parameters, ShowText) {
    Parameters p;
    p.num_ctx = 4096;
    p.stop    = {"<|im_end|>"};
    EXPECT_EQ(to_show_text(p), "num_ctx                        4096\n"
                               "stop                           \"<|im_end|>\"\n");
}
