// Tool calls under an Ollama Go TEMPLATE: the tag found in the template, and answers read
// whole and piece by piece.
#include "prepare/go_tool_calls.h"

#include "core/json_input.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::prepare;

namespace {

const std::vector<Tool> k_tools = {{"get_weather", "", "{}"}};

// Feeds `answer` in pieces of `step` bytes; returns every part joined.
AnswerPart read(const std::string & tag, const std::string & answer, size_t step) {
    GoToolCallReader r(tag, k_tools);
    AnswerPart       all;
    for (size_t i = 0; i < answer.size(); i += step) all.append(r.push(answer.substr(i, step)));
    all.append(r.finish());
    return all;
}

} // namespace

TEST(GoToolCalls, TagIsTheTextBeforeTheToolCallsRange) {
    // Qwen 2.5's template in Ollama's library, abridged.
    EXPECT_EQ(go_tool_call_tag("{{- if .ToolCalls }}<tool_call>\n{{ range .ToolCalls }}{\"name\": \"{{ .Function.Name }}\"}"
                               "{{ end }}</tool_call>{{ end }}"),
              "<tool_call>");
    EXPECT_EQ(go_tool_call_tag("{{ if .ToolCalls }}[TOOL_CALLS] {{- range $.ToolCalls }}{{ json . }}{{ end }}{{ end }}"), "[TOOL_CALLS]");
    EXPECT_EQ(go_tool_call_tag("{{ if .ToolCalls }}{{ range .ToolCalls }}{{ json .Function }}{{ end }}{{ end }}"), "{");
    EXPECT_EQ(go_tool_call_tag("{{ .Prompt }}"), "{");
}

TEST(GoToolCalls, TaggedCallsWholeAndStreamed) {
    const std::string answer = "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
                               "<tool_call>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}</tool_call>";
    for (size_t step : {answer.size(), size_t(1), size_t(4)}) {
        SCOPED_TRACE(step);
        const AnswerPart a = read("<tool_call>", answer, step);
        EXPECT_EQ(a.content, "Let me check.");
        ASSERT_EQ(a.tool_calls.size(), 2u);
        EXPECT_EQ(a.tool_calls[0].name, "get_weather");
        EXPECT_EQ(json::parse(a.tool_calls[0].arguments), json({{"city", "Paris"}}));
        EXPECT_EQ(json::parse(a.tool_calls[1].arguments), json({{"city", "Oslo"}}));
    }
    // Content before the tag streams at once, except what could be the tag's beginning.
    GoToolCallReader r("<tool_call>", k_tools);
    EXPECT_EQ(r.push("Hi <tool").content, "Hi ");
    EXPECT_EQ(r.push("box> there").content, "<toolbox> there");
    EXPECT_EQ(r.finish().content, "");
}

TEST(GoToolCalls, TextThatHoldsNoCallIsContent) {
    for (const std::string answer : {"<tool_call>not json", "<tool_call>{\"name\": \"unknown\", \"arguments\": {}}",
                                     "<tool_call>{\"name\": \"get_weather\", \"arguments\": {"}) {
        const AnswerPart a = read("<tool_call>", answer, 3);
        EXPECT_TRUE(a.tool_calls.empty()) << answer;
        EXPECT_EQ(a.content, answer);
    }
}

TEST(GoToolCalls, BareJsonCallsOnlyAtTheStart) {
    const AnswerPart call = read("{", " {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}", 2);
    ASSERT_EQ(call.tool_calls.size(), 1u);
    EXPECT_EQ(json::parse(call.tool_calls[0].arguments), json({{"city", "Rome"}}));
    const AnswerPart text = read("{", "Use {braces} freely", 2);
    EXPECT_TRUE(text.tool_calls.empty());
    EXPECT_EQ(text.content, "Use {braces} freely");
}
