#pragma once
// How Ollama turns a conversation into a prompt with a Go template (its template.Execute):
// the data it passes, the legacy turn-by-turn rendering for templates without .Messages, and
// the {{ .Response }} it appends to templates that mention neither.
#include "core/request.h"
#include "templates/go_template.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::templates {

// Parses a model's or a request's TEMPLATE as Ollama would use it. Throws bad_request with
// the parse error's line and column.
GoTemplate parse_ollama_template(std::string_view text);

// The prompt for `messages`, ending where the assistant's answer starts.
// - A template that uses .Messages gets {System (every system message, joined by blank
//   lines), Messages [{Role, Content, Thinking, Images, ToolCalls [{ID, Function {Index, Name,
//   Arguments}}], ToolName, ToolCallID}] (consecutive messages of one role merged), Tools
//   [{type, function {name, description, parameters}}], Response "", Think, ThinkLevel,
//   IsThinkSet}: the data of docs/templates.md.
// - Any other template is rendered once per turn with {System, Prompt, Response}, and the last
//   turn is cut where .Response is written.
std::string render_ollama_prompt(const GoTemplate & tmpl, const std::vector<Message> & messages,
                                 const std::vector<Tool> & tools = {}, const std::optional<ThinkSetting> & think = {});

} // namespace specd::templates
