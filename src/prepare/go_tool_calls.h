#pragma once
// Tool calls in the answers of a model whose prompt is an Ollama Go TEMPLATE, read as Ollama
// reads them: the template's own text before `range .ToolCalls` ("<tool_call>") opens a call,
// and a JSON object {"name", "arguments" (or "parameters")} naming one of the request's tools
// follows it. Text that does not read as calls stays content.
#include "core/answer_part.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace specd::prepare {

// The literal text right before the template's `range .ToolCalls` (or `range $.ToolCalls`),
// trimmed; "{" when there is none (the calls are bare JSON objects).
std::string go_tool_call_tag(std::string_view template_text);

class GoToolCallReader {
  public:
    GoToolCallReader(std::string tag, const std::vector<Tool> & tools);

    // Content passes through until the tag appears (a tag's possible beginning is held back);
    // from the tag on, the answer is kept until it ends.
    AnswerPart push(std::string_view text);
    // The calls read from what was kept, or that text as content when it holds none.
    AnswerPart finish();

  private:
    std::string           tag_;
    std::set<std::string> names_;
    std::string           pending_; // not yet sent: a possible tag start, or everything from the tag
    bool                  in_calls_ = false;
    bool                  any_text_ = false; // content other than whitespace was sent
};

} // namespace specd::prepare
