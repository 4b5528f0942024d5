// OpenAI's Responses API bodies -> the chat completion they mean, then the chat decoder: what
// each field becomes, and every refusal as a ParamError naming its Responses field.
#include "api/responses_request.h"

#include "core/error.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

namespace {

// The ParamError `fn` throws: its param ("<none>" when it throws none).
template <class F> std::string param_of(F fn) {
    try {
        fn();
    } catch (const ParamError & e) {
        return e.param();
    }
    return "<none>";
}

} // namespace

TEST(ResponsesRequest, InputItemsBecomeChatMessages) {
    const json body = {
        {"model", "tiny"},
        {"instructions", "Be brief."},
        {"input",
         {{{"role", "user"}, {"content", "Weather in Paris?"}},
          {{"type", "message"}, {"role", "assistant"}, {"content", {{{"type", "output_text"}, {"text", "Let me look."}}}}},
          {{"type", "function_call"}, {"call_id", "call_1"}, {"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}},
          {{"type", "function_call"}, {"call_id", "call_2"}, {"name", "get_time"}, {"arguments", "{}"}},
          {{"type", "reasoning"}, {"summary", json::array()}},
          {{"type", "function_call_output"}, {"call_id", "call_2"}, {"output", "noon"}},
          {{"type", "function_call_output"}, {"call_id", "call_1"}, {"output", "sunny"}},
          {{"role", "user"}, {"content", {{{"type", "input_text"}, {"text", "Thanks."}}}}}}},
        {"max_output_tokens", 16},
        {"temperature", 0},
    };
    const json chat = responses_to_chat(body);
    EXPECT_EQ(chat["max_tokens"], 16);
    EXPECT_EQ(chat["temperature"], 0);
    const OpenAIRequest r = decode_openai_responses(body);
    const auto &        m = r.decoded.request.prompt.messages;
    ASSERT_EQ(m.size(), 6u);
    EXPECT_EQ(m[0].role, "system");
    EXPECT_EQ(m[0].content, "Be brief.");
    EXPECT_EQ(m[1].content, "Weather in Paris?");
    // The text and both calls are one assistant turn.
    EXPECT_EQ(m[2].role, "assistant");
    EXPECT_EQ(m[2].content, "Let me look.");
    ASSERT_EQ(m[2].tool_calls.size(), 2u);
    EXPECT_EQ(m[2].tool_calls[1].id, "call_2");
    EXPECT_EQ(m[3].role, "tool");
    EXPECT_EQ(m[3].tool_name, "get_time"); // found by the call's id
    EXPECT_EQ(m[4].tool_name, "get_weather");
    EXPECT_EQ(m[5].content, "Thanks.");
    EXPECT_EQ(r.decoded.options["num_predict"], 16); // applied over the model's PARAMETERs later
    EXPECT_FALSE(r.decoded.stream); // OpenAI's default
}

TEST(ResponsesRequest, ToolsFormatAndReasoningMapToTheirChatFields) {
    const json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}, {"required", {"n"}}};
    const json body   = {
        {"model", "tiny"},
        {"input", "hi"},
        {"tools", {{{"type", "function"}, {"name", "pick"}, {"description", "Pick"}, {"parameters", schema}}}},
        {"tool_choice", {{"type", "function"}, {"name", "pick"}}},
        {"text", {{"format", {{"type", "json_schema"}, {"name", "n"}, {"schema", schema}}}}},
        {"reasoning", {{"effort", "low"}}},
        {"stream", true},
    };
    const json chat = responses_to_chat(body);
    EXPECT_EQ(chat["tools"][0]["function"]["name"], "pick");
    EXPECT_EQ(chat["response_format"]["json_schema"]["schema"], schema);
    EXPECT_EQ(chat["messages"], json::parse(R"([{"role":"user","content":"hi"}])"));
    const OpenAIRequest r = decode_openai_responses(body);
    EXPECT_TRUE(r.decoded.stream);
    EXPECT_EQ(r.decoded.request.prompt.tools.at(0).name, "pick");
    EXPECT_EQ(r.decoded.request.prompt.tool_forced, "pick"); // the Responses API's form
    EXPECT_TRUE(r.decoded.request.prompt.tool_required);
    EXPECT_EQ(r.decoded.request.prompt.think->effort, "low");
    EXPECT_FALSE(r.decoded.request.generate.grammar.empty());
}

TEST(ResponsesRequest, WhatSpecdCannotServeNamesTheField) {
    const auto body = [](json extra) {
        json b = {{"model", "tiny"}, {"input", "hi"}};
        for (auto & [k, v] : extra.items()) b[k] = v;
        return b;
    };
    const struct {
        json        body;
        std::string param;
    } cases[] = {
        {body({{"previous_response_id", "resp_1"}}), "previous_response_id"},
        {body({{"conversation", "conv_1"}}), "conversation"},
        {body({{"background", true}}), "background"},
        {body({{"tools", {{{"type", "web_search"}}}}}), "tools[0].type"},
        {body({{"tools", {{{"type", "function"}}}}}), "tools[0].name"},
        {body({{"input", 5}}), "input"},
        {body({{"input", {{{"type", "computer_call"}}}}}), "input[0].type"},
        {body({{"input", {{{"role", "user"}, {"content", {{{"type", "input_file"}}}}}}}}), "input[0].content[0].type"},
        {body({{"input", {{{"type", "function_call_output"}, {"call_id", "c"}}}}}), "input[0].output"},
        {body({{"instructions", 3}}), "instructions"},
        {body({{"tool_choice", "required"}}), "tool_choice"}, // and no tools
        {body({{"text", {{"format", {{"type", "yaml"}}}}}}), "text.format.type"},
        {json{{"model", "tiny"}}, "input"},
    };
    for (const auto & c : cases) EXPECT_EQ(param_of([&] { decode_openai_responses(c.body); }), c.param) << c.body.dump();
    EXPECT_EQ(param_of([&] { decode_openai_responses(body({{"background", false}, {"store", false}})); }), "<none>");
}
