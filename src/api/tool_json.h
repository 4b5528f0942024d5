#pragma once
// Tools and tool calls in JSON, for Ollama's API and OpenAI's (the same `tools` array;
// calls whose arguments are an object in Ollama's shape and a JSON string in OpenAI's).
#include "core/json_input.h"
#include "core/request.h"

#include <string>
#include <vector>

namespace specd::api {

// `tools`: [{type: "function", function: {name, description?, parameters?}}]. Each part is
// checked; a 400 names what is wrong.
std::vector<Tool> decode_tools(const json & tools);

// A message's `tool_calls`: [{function: {name, arguments}}], arguments an object (Ollama) or
// a string holding one (OpenAI); `where` names the message in errors.
std::vector<ToolCall> decode_tool_calls(const json & calls, const std::string & where);

// Ollama: [{function: {index, name, arguments: {...}}}]. OpenAI: [{index, id, type: "function",
// function: {name, arguments: "{...}"}}], numbered from `first_index` (streamed calls keep
// counting up).
json tool_calls_json(const std::vector<ToolCall> & calls, bool openai, size_t first_index = 0);

} // namespace specd::api
