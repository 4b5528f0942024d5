#include "core/error.h"
#include "templates/ollama_prompt.h"

#include <gtest/gtest.h>

using specd::Message;
using specd::templates::parse_ollama_template;
using specd::templates::render_ollama_prompt;

namespace {

std::vector<Message> conversation() {
    return {{"system", "Be brief.", {}}, {"user", "Hi", {}}, {"assistant", "Hello!", {}}, {"user", "How are you?", {}}};
}

} // namespace

TEST(OllamaPrompt, MessagesTemplatesGetTheWholeConversation) {
    const auto t = parse_ollama_template(
        "{{- if .System }}<s>{{ .System }}</s>{{ end }}"
        "{{- range .Messages }}<{{ .Role }}>{{ .Content }}</{{ .Role }}>{{ end }}<assistant>");
    EXPECT_EQ(render_ollama_prompt(t, conversation()),
              "<s>Be brief.</s><system>Be brief.</system><user>Hi</user><assistant>Hello!</assistant>"
              "<user>How are you?</user><assistant>");
}

TEST(OllamaPrompt, ConsecutiveMessagesOfOneRoleAreMerged) {
    const auto t = parse_ollama_template("{{ range .Messages }}[{{ .Role }}:{{ .Content }}]{{ end }}");
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "a", {}}, {"user", "b", {}}}), "[user:a\n\nb]");
}

// Templates written for Ollama's older form: rendered turn by turn, the last one cut where
// the answer goes.
TEST(OllamaPrompt, LegacyTemplatesRenderTurnByTurn) {
    const auto t = parse_ollama_template(
        "{{ if .System }}SYS {{ .System }}\n{{ end }}USER {{ .Prompt }}\nASSISTANT {{ .Response }}</s>\n");
    EXPECT_EQ(render_ollama_prompt(t, conversation()),
              "SYS Be brief.\nUSER Hi\nASSISTANT Hello!</s>\nUSER How are you?\nASSISTANT ");
    // A last assistant message is continued, not closed.
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "Hi", {}}, {"assistant", "Hel", {}}}), "USER Hi\nASSISTANT Hel");
}

TEST(OllamaPrompt, ATemplateWithoutResponseGetsOneAppended) {
    const auto t = parse_ollama_template("[INST] {{ .Prompt }} [/INST]");
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "Hi", {}}}), "[INST] Hi [/INST]");
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "Hi", {}}, {"assistant", "Yo", {}}, {"user", "Again", {}}}),
              "[INST] Hi [/INST]Yo[INST] Again [/INST]");
}

TEST(OllamaPrompt, ParseErrorsNameTheirPlace) {
    try {
        parse_ollama_template("{{ if .System }}never closed");
        FAIL() << "expected an error";
    } catch (const specd::Error & e) {
        EXPECT_NE(std::string(e.what()).find("invalid template: line 1"), std::string::npos) << e.what();
    }
}

// A Qwen-style Go template: tools as Ollama prints them, a call's arguments, a tool result,
// and the thinking switch.
TEST(OllamaPrompt, ToolsCallsAndThinkReachTheTemplate) {
    const auto t = parse_ollama_template(
        "{{- range .Tools }}<tool>{{ .Function }}</tool>{{ end }}"
        "{{- range .Messages }}[{{ .Role }}"
        "{{- range .ToolCalls }} call {{ .Function.Name }} {{ .Function.Arguments }}{{ end }}"
        "{{- if .ToolName }} from {{ .ToolName }}{{ end }}: {{ .Content }}]{{ end }}"
        "{{- if .IsThinkSet }}{{ if .Think }}<think>{{ else }}<nothink>{{ end }}{{ end }}");
    Message call{"assistant", ""};
    call.tool_calls = {{"get_weather", R"({"city":"Paris"})"}};
    Message result{"tool", "sunny"};
    result.tool_name = "get_weather";
    const std::vector<Message> history = {{"user", "Weather?"}, call, result};
    const std::vector<specd::Tool> tools = {{"get_weather", "The weather", R"({"type":"object"})"}};
    EXPECT_EQ(render_ollama_prompt(t, history, tools, specd::ThinkSetting{true, ""}),
              R"(<tool>{"name":"get_weather","description":"The weather","parameters":{"type":"object"}}</tool>)"
              R"([user: Weather?][assistant call get_weather {"city":"Paris"}: ][tool from get_weather: sunny]<think>)");
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "Hi"}}, {}, specd::ThinkSetting{false, ""}), "[user: Hi]<nothink>");
    EXPECT_EQ(render_ollama_prompt(t, {{"user", "Hi"}}), "[user: Hi]");
}
