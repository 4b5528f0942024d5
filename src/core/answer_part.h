#pragma once
// An answer as the client sees it: the text a model's template separates into reasoning,
// content and tool calls (prepare/answer_reader.h reads it, api/ writes it).
#include "core/request.h"

#include <string>
#include <utility>
#include <vector>

namespace specd {

// Some of an answer: its text, or with `think` or `tools` the reasoning, content and tool
// calls the model's template separates. Plain text converts implicitly.
struct AnswerPart {
    std::string           content;
    std::string           thinking;
    std::vector<ToolCall> tool_calls;

    AnswerPart() = default;
    AnswerPart(std::string text) : content(std::move(text)) {}
    AnswerPart(const char * text) : content(text) {}

    bool empty() const { return content.empty() && thinking.empty() && tool_calls.empty(); }
    void append(const AnswerPart & more) {
        content += more.content;
        thinking += more.thinking;
        tool_calls.insert(tool_calls.end(), more.tool_calls.begin(), more.tool_calls.end());
    }
};

} // namespace specd
