#include "templates/ollama_prompt.h"

#include <algorithm>

namespace specd::templates {

namespace {

using json = nlohmann::ordered_json;

bool uses(const GoTemplate & t, std::string_view var) {
    const auto v = t.vars();
    return std::find(v.begin(), v.end(), var) != v.end();
}

// Ollama's collate: system messages also joined into one System; consecutive messages of a
// role merged with a blank line between them.
struct Collated {
    std::string          system;
    std::vector<Message> messages;
};

Collated collate(const std::vector<Message> & in) {
    Collated out;
    for (const Message & m : in) {
        if (m.role == "system") out.system += (out.system.empty() ? "" : "\n\n") + m.content;
        if (!out.messages.empty() && out.messages.back().role == m.role) {
            out.messages.back().content += "\n\n" + m.content;
            auto & calls = out.messages.back().tool_calls;
            calls.insert(calls.end(), m.tool_calls.begin(), m.tool_calls.end());
        } else {
            out.messages.push_back(m);
        }
    }
    return out;
}

// Stands for the answer in the last legacy turn: the prompt ends where it is written (Ollama
// deletes the template's nodes after its .Response instead; for a template rendered once
// front to back the text is the same).
const std::string k_response_mark("\x00specd:response\x00", 16);

} // namespace

GoTemplate parse_ollama_template(std::string_view text) {
    GoTemplate t = GoTemplate::parse(text);
    if (!uses(t, "messages") && !uses(t, "response")) t = GoTemplate::parse(std::string(text) + "{{ .Response }}");
    return t;
}

namespace {

// Tool parameters and call arguments are JSON objects in Ollama's template data; text that
// is not JSON (checked at the API's edge, so not expected here) stays a string.
json parsed_or_text(const std::string & text) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? json(text) : j;
}

// Ollama's api.Tool marshals under its JSON names ({{ .Function }} prints that JSON; field
// access falls back to the lower-case key); messages and tool calls have Go names only.
json tools_data(const std::vector<Tool> & tools) {
    json out = json::array();
    for (const Tool & t : tools) {
        out.push_back({{"type", "function"},
                       {"function", {{"name", t.name}, {"description", t.description}, {"parameters", parsed_or_text(t.parameters)}}}});
    }
    return out;
}

// Every field of Ollama's api.Message, zero values included (see docs/templates.md).
json message_data(const Message & m) {
    json calls = json::array();
    for (size_t i = 0; i < m.tool_calls.size(); ++i) {
        const ToolCall & c = m.tool_calls[i];
        calls.push_back({{"ID", ""}, {"Function", {{"Index", i}, {"Name", c.name}, {"Arguments", parsed_or_text(c.arguments)}}}});
    }
    return {{"Role", m.role},     {"Content", m.content},     {"Thinking", m.thinking}, {"Images", json::array()},
            {"ToolCalls", calls}, {"ToolName", m.tool_name}, {"ToolCallID", ""}};
}

} // namespace

std::string render_ollama_prompt(const GoTemplate & tmpl, const std::vector<Message> & in, const std::vector<Tool> & tools,
                                 const std::optional<ThinkSetting> & think) {
    const Collated c = collate(in);
    if (uses(tmpl, "messages")) {
        json messages = json::array();
        for (const Message & m : c.messages) messages.push_back(message_data(m));
        json data = {{"System", c.system}, {"Messages", messages}, {"Tools", tools_data(tools)}, {"Response", ""}};
        // Ollama's thinking variables: .Think (on or off), .ThinkLevel, .IsThinkSet.
        data["Think"]      = think && think->enabled;
        data["ThinkLevel"] = think ? think->effort : "";
        data["IsThinkSet"] = think.has_value();
        return tmpl.render(data);
    }
    std::string out, system, prompt, response;
    const auto  turn = [&] {
        out += tmpl.render({{"System", system}, {"Prompt", prompt}, {"Response", response}});
        system.clear();
        prompt.clear();
        response.clear();
    };
    for (const Message & m : c.messages) {
        if (m.role == "system") {
            if (!prompt.empty() || !response.empty()) turn();
            system = m.content;
        } else if (m.role == "user") { // Ollama's legacy rendering leaves tool messages out
            if (!response.empty()) turn();
            prompt = m.content;
        } else if (m.role == "assistant") {
            response = m.content;
        }
    }
    // An unanswered last turn, or a last assistant message the model is to continue.
    const std::string last = tmpl.render({{"System", system}, {"Prompt", prompt}, {"Response", response + k_response_mark}});
    return out + last.substr(0, last.find(k_response_mark));
}

} // namespace specd::templates
