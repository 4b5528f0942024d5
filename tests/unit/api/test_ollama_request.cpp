#include "api/ollama_request.h"

#include "core/error.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

namespace {

// The message of the bad_request that `fn` throws ("" when it does not throw one).
template <class F> std::string bad_request_message(F fn) {
    try {
        fn();
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        return e.what();
    }
    return "";
}

} // namespace

TEST(OllamaRequest, GenerateDefaults) {
    auto d = decode_generate(json{{"model", "tiny"}, {"prompt", "hi"}});
    EXPECT_EQ(d.model, "tiny");
    EXPECT_TRUE(d.stream);
    EXPECT_FALSE(d.request.load_only);
    EXPECT_TRUE(d.request.generate.truncate);
    EXPECT_TRUE(d.request.generate.grammar.empty());
}

TEST(OllamaRequest, EmptyPromptOnlyLoads) {
    EXPECT_TRUE(decode_generate(json{{"model", "tiny"}}).request.load_only);
    EXPECT_TRUE(decode_chat(json{{"model", "tiny"}, {"messages", json::array()}}).request.load_only);
}

TEST(OllamaRequest, RejectsWrongTypesAndUnknownRoles) {
    struct Case { json body; bool chat; std::string needle; };
    const std::vector<Case> cases = {
        {{{"prompt", "x"}}, false, "model is required"},
        {{{"model", 3}}, false, "model must be a string"},
        {{{"model", "m"}, {"prompt", 5}}, false, "prompt must be a string"},
        {{{"model", "m"}, {"stream", "yes"}}, false, "stream must be a boolean"},
        {{{"model", "m"}, {"options", json::array()}}, false, "options must be an object"},
        {{{"model", "m"}, {"format", "xml"}}, false, "invalid format"},
        {{{"model", "m"}, {"format", 7}}, false, "invalid format"},
        {{{"model", "m"}, {"context", {1, "a"}}}, false, "context"},
        {{{"model", "m"}, {"images", {"aGk="}}}, false, "images"},
        {{{"model", "m"}, {"think", true}}, false, "think"},
        {{{"model", "m"}, {"template", "{{ .Prompt }}"}}, false, "template"},
        {{{"model", "m"}, {"keep_alive", "5 minutes"}}, false, "keep_alive"},
        {{{"model", "m"}, {"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, true, "invalid role"},
        {{{"model", "m"}, {"messages", {json::object()}}}, true, "role is required"},
        {{{"model", "m"}, {"messages", "hello"}}, true, "messages must be an array"},
        {{{"model", "m"}, {"tools", {{{"type", "function"}}}}}, true, "tools"},
    };
    for (const auto & c : cases) {
        const auto msg = bad_request_message([&] { c.chat ? decode_chat(c.body) : decode_generate(c.body); });
        EXPECT_NE(msg.find(c.needle), std::string::npos) << c.body.dump() << " -> " << msg;
    }
}

TEST(OllamaRequest, FormatJsonAndSchemaBecomeGrammars) {
    auto d1 = decode_generate(json{{"model", "m"}, {"format", "json"}});
    EXPECT_NE(d1.request.generate.grammar.find("root"), std::string::npos);
    auto d2 = decode_generate(json{{"model", "m"},
                                   {"format", {{"type", "object"}, {"properties", {{"age", {{"type", "integer"}}}}},
                                               {"required", {"age"}}}}});
    EXPECT_NE(d2.request.generate.grammar.find("age"), std::string::npos);
}

TEST(OllamaRequest, OptionsOverrideModelParameters) {
    models::Parameters model;
    model.temperature = 0.5;
    model.num_ctx     = 1024;
    model.stop        = {"a"};
    GenerateRequest r;
    apply_options(model, json{{"temperature", 0}, {"stop", {"x", "y"}}, {"seed", 42}, {"num_gpu", 99}}, r);
    EXPECT_EQ(r.generate.sampling.temperature, 0.0f);
    EXPECT_EQ(r.context.num_ctx, 1024);
    EXPECT_EQ(r.generate.stop, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(r.generate.sampling.seed, 42);
}

TEST(OllamaRequest, RejectsBadOptions) {
    const std::vector<json> bad = {
        {{"num_ctx", 0}}, {{"num_ctx", -5}}, {{"num_ctx", (1 << 24) + 1}}, {{"num_predict", -3}},
        {{"num_predict", 1 << 30}}, {{"temperature", "hot"}}, {{"top_p", 2}}, {{"temperature", -1}},
        {{"mirostat", 2}}, {{"no_such_option", 1}}, {{"use_mmap", 1}},
    };
    for (const auto & o : bad) {
        GenerateRequest r;
        EXPECT_FALSE(bad_request_message([&] { apply_options({}, o, r); }).empty()) << o.dump();
    }
}

TEST(OllamaRequest, KeepAliveForms) {
    using namespace std::chrono;
    EXPECT_EQ(*parse_keep_alive(json("5m")), minutes(5));
    EXPECT_EQ(*parse_keep_alive(json("1h30m")), minutes(90));
    EXPECT_EQ(*parse_keep_alive(json("0")), nanoseconds(0));
    EXPECT_EQ(*parse_keep_alive(json(0)), nanoseconds(0));
    EXPECT_EQ(*parse_keep_alive(json(10)), seconds(10));
    EXPECT_LT(parse_keep_alive(json("-1"))->count(), 0);
    EXPECT_LT(parse_keep_alive(json(-1))->count(), 0);
    EXPECT_FALSE(parse_keep_alive(json(nullptr)).has_value());
}

TEST(JsonInput, RejectsHostileBodies) {
    EXPECT_FALSE(bad_request_message([] { parse_body("{\"a\": "); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body("[1,2]"); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body(std::string(100000, '[')); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body("{\"model\": \"\xff\xfe\"}"); }).empty());
    EXPECT_EQ(parse_body("{\"a\": \"[[[[\"}")["a"], "[[[[");
}
