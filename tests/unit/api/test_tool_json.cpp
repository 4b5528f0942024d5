// Tools and tool calls in JSON, and the thinking / tool_calls fields of Ollama's and OpenAI's
// answers (whole and streamed).
#include "api/ollama_response.h"
#include "api/openai_response.h"
#include "api/tool_json.h"

#include "core/error.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

namespace {

AnswerPart answer(std::string content, std::string thinking, std::vector<ToolCall> calls) {
    AnswerPart a(std::move(content));
    a.thinking   = std::move(thinking);
    a.tool_calls = std::move(calls);
    return a;
}

const std::vector<ToolCall> k_call = {{"get_weather", R"({"city":"Paris"})"}};

} // namespace

TEST(ToolJson, ToolsDecodeWithDefaults) {
    const auto tools = decode_tools(json::parse(R"([{"type":"function","function":{"name":"f","description":"d",
        "parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}},{"function":{"name":"g"}}])"));
    ASSERT_EQ(tools.size(), 2u);
    EXPECT_EQ(tools[0].name, "f");
    EXPECT_EQ(tools[0].description, "d");
    EXPECT_EQ(json::parse(tools[0].parameters)["properties"]["x"]["type"], "integer");
    EXPECT_EQ(json::parse(tools[1].parameters)["type"], "object"); // none given: no parameters
    EXPECT_TRUE(decode_tools(json()).empty());
    EXPECT_THROW(decode_tools(json::parse(R"([{"type":"code","function":{"name":"f"}}])")), Error);
    EXPECT_THROW(decode_tools(json::parse(R"([{"function":{"name":"f","parameters":[1]}}])")), Error);
}

TEST(ToolJson, CallArgumentsAreObjectsInEitherShape) {
    const auto ollama = decode_tool_calls(json::parse(R"([{"function":{"name":"f","arguments":{"a":1}}}])"), "m");
    const auto openai = decode_tool_calls(json::parse(R"([{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}])"), "m");
    ASSERT_EQ(ollama.size(), 1u);
    ASSERT_EQ(openai.size(), 1u);
    EXPECT_EQ(json::parse(ollama[0].arguments), json::parse(openai[0].arguments));
    EXPECT_EQ(decode_tool_calls(json::parse(R"([{"function":{"name":"f"}}])"), "m")[0].arguments, "{}");
    for (const char * bad : {R"([{"function":{"name":"f","arguments":"[1]"}}])", R"([{"function":{"arguments":{}}}])", R"({"a":1})"}) {
        EXPECT_THROW(decode_tool_calls(json::parse(bad), "m"), Error) << bad;
    }
}

TEST(ToolJson, OllamaChunksCarryThinkingAndCalls) {
    const json chat = text_chunk("m", answer("hi", "hmm", k_call), /*chat=*/true);
    EXPECT_EQ(chat["message"]["content"], "hi");
    EXPECT_EQ(chat["message"]["thinking"], "hmm");
    json calls = chat["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u);
    // Every call carries an id (Ollama's newer form), made up when the model's answer had none.
    EXPECT_TRUE(calls[0]["id"].is_string() && calls[0]["id"].get<std::string>().starts_with("call_")) << calls.dump();
    calls[0].erase("id");
    EXPECT_EQ(calls, json::parse(R"([{"function":{"index":0,"name":"get_weather","arguments":{"city":"Paris"}}}])"));
    // A call that has an id (one the client sent back) keeps it.
    ToolCall with_id = k_call.front();
    with_id.id       = "call_7";
    EXPECT_EQ(tool_calls_json({with_id}, /*openai=*/false)[0]["id"], "call_7");
    EXPECT_EQ(tool_calls_json({with_id}, /*openai=*/true)[0]["id"], "call_7");
    const json gen = text_chunk("m", answer("{}", "hmm", {}), /*chat=*/false);
    EXPECT_EQ(gen["response"], "{}");
    EXPECT_EQ(gen["thinking"], "hmm");
    // Plain answers look as they always did: no empty fields.
    const json plain = text_chunk("m", "hi", true);
    EXPECT_FALSE(plain["message"].contains("thinking"));
    EXPECT_FALSE(plain["message"].contains("tool_calls"));
}

TEST(ToolJson, OpenAIWholeAnswerWithCalls) {
    OpenAIWriter w(OpenAIEndpoint::chat, "m", false);
    const json   a = w.answer_json(answer("", "because", k_call), scheduler::DoneInfo{});
    const json & m = a["choices"][0]["message"];
    EXPECT_TRUE(m["content"].is_null());
    EXPECT_EQ(m["reasoning_content"], "because");
    ASSERT_EQ(m["tool_calls"].size(), 1u);
    EXPECT_EQ(m["tool_calls"][0]["type"], "function");
    EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().rfind("call_", 0), 0u);
    EXPECT_EQ(json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()), json({{"city", "Paris"}}));
    EXPECT_EQ(a["choices"][0]["finish_reason"], "tool_calls");
}

TEST(ToolJson, OpenAIStreamNumbersCallsAndFinishesWithToolCalls) {
    OpenAIWriter w(OpenAIEndpoint::chat, "m", false);
    const auto   payload = [](const std::string & sse) { return json::parse(sse.substr(6, sse.find("\n\n") - 6)); };
    const json   first   = payload(w.chunk_text(answer("", "so", {})));
    EXPECT_EQ(first["choices"][0]["delta"]["reasoning_content"], "so");
    EXPECT_FALSE(first["choices"][0]["delta"].contains("content"));
    const json c1 = payload(w.chunk_text(answer("", "", k_call)));
    const json c2 = payload(w.chunk_text(answer("", "", k_call)));
    EXPECT_EQ(c1["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
    EXPECT_EQ(c2["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
    EXPECT_EQ(payload(w.chunk_done(scheduler::DoneInfo{}))["choices"][0]["finish_reason"], "tool_calls");
}
