// Thinking and tool calls in answers, read with the parser llama.cpp derives from the
// fixture's Qwen3 template (think.gguf): whole and piece by piece, as a stream arrives.
#include "engine/chat_output.h"
#include "engine/chat_template.h"
#include "engine/gguf_info.h"
#include "fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace specd;

namespace {

const engine::ChatTemplate & qwen3() {
    static const engine::ChatTemplate t(engine::read_gguf_info(fixtures::fixture("think.gguf")).chat_template);
    return t;
}

const std::vector<Message> k_ask = {Message{"user", "Weather in Paris?"}};
const std::vector<Tool>    k_tools = {{"get_weather", "The weather", R"({"type":"object","properties":{"city":{"type":"string"}}})"}};

// The answer fed in pieces of `step` bytes (0: whole), every delta joined.
engine::ChatDelta read(const engine::ChatRender & r, const std::string & answer, size_t step) {
    engine::ChatOutputParser parser(r.syntax);
    engine::ChatDelta        all;
    const auto               add = [&](engine::ChatDelta d) {
        all.thinking += d.thinking;
        all.content += d.content;
        all.tool_calls.insert(all.tool_calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    };
    for (size_t i = 0; step && i < answer.size(); i += step) add(parser.push(answer.substr(i, step)));
    if (!step) add(parser.push(answer));
    add(parser.finish());
    return all;
}

} // namespace

TEST(ChatOutput, FeaturesOfTheTemplates) {
    EXPECT_TRUE(qwen3().features().thinking);
    EXPECT_TRUE(qwen3().features().tools);
    const engine::ChatTemplate phi3(engine::read_gguf_info(fixtures::fixture("tiny.gguf")).chat_template);
    EXPECT_FALSE(phi3.features().thinking);
    EXPECT_FALSE(phi3.features().tools);
}

TEST(ChatOutput, ThinkingRendersAndSplits) {
    const auto on = qwen3().render_chat(k_ask, {}, ThinkSetting{true, ""});
    EXPECT_EQ(on.thinking_start, "<think>");
    EXPECT_EQ(on.thinking_end, "</think>");
    EXPECT_FALSE(on.thinking_open);
    const auto off = qwen3().render_chat(k_ask, {}, ThinkSetting{false, ""});
    EXPECT_NE(off.prompt.find("<think>\n\n</think>"), std::string::npos) << off.prompt;
    EXPECT_EQ(on.prompt.find("<think>"), std::string::npos) << on.prompt;
    // Unset renders as render() does (thinking off), which every other request gets.
    EXPECT_EQ(qwen3().render_chat(k_ask, {}, std::nullopt).prompt, qwen3().render(k_ask, true));

    const std::string answer = "<think>\nClouds, then rain.\n</think>\n\n{\"rain\": true}";
    for (size_t step : {0, 1, 3, 7}) {
        SCOPED_TRACE(step);
        const auto d = read(on, answer, step);
        EXPECT_EQ(d.thinking, "Clouds, then rain.\n"); // the parser trims the start tag's newline only
        EXPECT_EQ(d.content, "{\"rain\": true}");
        EXPECT_TRUE(d.tool_calls.empty());
    }
    // An answer cut inside its reasoning is all reasoning.
    EXPECT_EQ(read(on, "<think>\nstill going", 2).thinking, "still going");
    EXPECT_EQ(read(on, "<think>\nstill going", 2).content, "");
}

// A required call: llama.cpp's grammar for the whole turn, rooted at its tool-calls rule
// (it parses from the generation prompt's text and allows free text first; neither is
// wanted when the grammar drives sampling).
TEST(ChatOutput, ARequiredCallIsTheToolCallsRuleAlone) {
    const auto free = qwen3().render_chat(k_ask, k_tools, std::nullopt);
    EXPECT_TRUE(free.tool_grammar.empty());
    const auto r = qwen3().render_chat(k_ask, k_tools, std::nullopt, true);
    EXPECT_EQ(r.prompt, free.prompt); // forcing the call changes no prompt text
    ASSERT_TRUE(r.tool_grammar.starts_with("root ::= tool-calls\n") || r.tool_grammar.find("\nroot ::= tool-calls\n") != std::string::npos)
        << r.tool_grammar;
    EXPECT_NE(r.tool_grammar.find("\ntool-calls ::= "), std::string::npos);
    EXPECT_EQ(r.tool_grammar.find("<|im_start|>"), std::string::npos) << r.tool_grammar;
    EXPECT_NE(r.tool_grammar.find("get_weather"), std::string::npos);
}

TEST(ChatOutput, ToolCallsParseWholeAndStreamed) {
    const auto        r      = qwen3().render_chat(k_ask, k_tools, std::nullopt);
    EXPECT_NE(r.prompt.find("get_weather"), std::string::npos);
    const std::string answer = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
    for (size_t step : {0, 1, 5}) {
        SCOPED_TRACE(step);
        const auto d = read(r, answer, step);
        ASSERT_EQ(d.tool_calls.size(), 2u);
        EXPECT_EQ(d.tool_calls[0].name, "get_weather");
        EXPECT_EQ(nlohmann::json::parse(d.tool_calls[0].arguments), nlohmann::json({{"city", "Paris"}}));
        EXPECT_EQ(nlohmann::json::parse(d.tool_calls[1].arguments), nlohmann::json({{"city", "Oslo"}}));
        EXPECT_EQ(d.content.find("<tool_call>"), std::string::npos) << d.content;
    }
    // A call is reported once it is complete: not while its arguments still stream in.
    engine::ChatOutputParser p(r.syntax);
    EXPECT_TRUE(p.push("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci").tool_calls.empty());
    EXPECT_EQ(p.push("ty\": \"Rome\"}}\n</tool_call>").tool_calls.size() + p.finish().tool_calls.size(), 1u);
    // Plain text with tools offered stays content.
    EXPECT_EQ(read(r, "No call needed.", 4).content, "No call needed.");
}

TEST(ChatOutput, HistoryWithCallsAndResultsRenders) {
    Message call{"assistant", ""};
    call.tool_calls = {{"get_weather", R"({"city":"Paris"})"}};
    Message result{"tool", "sunny"};
    result.tool_name = "get_weather";
    std::vector<Message> history = k_ask;
    history.push_back(call);
    history.push_back(result);
    const std::string prompt = qwen3().render_chat(history, k_tools, std::nullopt).prompt;
    EXPECT_NE(prompt.find("\"city\": \"Paris\""), std::string::npos) << prompt;
    EXPECT_NE(prompt.find("<tool_response>\nsunny\n</tool_response>"), std::string::npos) << prompt;
}
