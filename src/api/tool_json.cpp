#include "api/tool_json.h"

#include "core/error.h"

#include <random>

namespace specd::api {

namespace {

json parse_object_text(const std::string & text) {
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j : json::object();
}

std::string call_id() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    static constexpr char        digits[] = "0123456789abcdef";
    std::string                  out      = "call_";
    uint64_t                     bits     = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) out += digits[bits & 15];
    return out;
}

} // namespace

std::vector<Tool> decode_tools(const json & tools) {
    if (tools.is_null()) return {};
    if (!tools.is_array()) throw bad_request("tools must be an array");
    std::vector<Tool> out;
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string where = "tools[" + std::to_string(i) + "]";
        const json &      t     = tools[i];
        if (!t.is_object()) throw bad_request(where + " must be an object");
        if (auto type = opt_string(t, "type"); type && *type != "function") {
            throw bad_request(where + ".type must be \"function\"");
        }
        auto f = t.find("function");
        if (f == t.end() || !f->is_object()) throw bad_request(where + ".function must be an object");
        Tool tool;
        tool.name = opt_string(*f, "name").value_or("");
        if (tool.name.empty()) throw bad_request(where + ".function.name is required");
        tool.description = opt_string(*f, "description").value_or("");
        if (auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
            if (!p->is_object()) throw bad_request(where + ".function.parameters must be a JSON schema object");
            tool.parameters = p->dump();
        } else {
            tool.parameters = R"({"type":"object","properties":{}})";
        }
        out.push_back(std::move(tool));
    }
    return out;
}

std::vector<ToolCall> decode_tool_calls(const json & calls, const std::string & where) {
    if (calls.is_null()) return {};
    if (!calls.is_array()) throw bad_request(where + ".tool_calls must be an array");
    std::vector<ToolCall> out;
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string at = where + ".tool_calls[" + std::to_string(i) + "]";
        const json &      c  = calls[i];
        auto              f  = c.is_object() ? c.find("function") : c.end();
        if (!c.is_object() || f == c.end() || !f->is_object()) throw bad_request(at + ".function must be an object");
        ToolCall call;
        call.id   = opt_string(c, "id").value_or("");
        call.name = opt_string(*f, "name").value_or("");
        if (call.name.empty()) throw bad_request(at + ".function.name is required");
        auto a = f->find("arguments");
        if (a == f->end() || a->is_null()) {
            call.arguments = "{}";
        } else if (a->is_object()) {
            call.arguments = a->dump();
        } else if (json parsed = a->is_string() ? json::parse(a->get<std::string>(), nullptr, false) : json();
                   parsed.is_object()) {
            call.arguments = parsed.dump();
        } else {
            throw bad_request(at + ".function.arguments must be a JSON object (or, OpenAI's form, a string holding one)");
        }
        out.push_back(std::move(call));
    }
    return out;
}

json tool_calls_json(const std::vector<ToolCall> & calls, bool openai, size_t first_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const ToolCall & c = calls[i];
        if (openai) {
            out.push_back({{"index", first_index + i},
                           {"id", c.id.empty() ? call_id() : c.id},
                           {"type", "function"},
                           {"function", {{"name", c.name}, {"arguments", parse_object_text(c.arguments).dump()}}}});
        } else {
            out.push_back({{"id", c.id.empty() ? call_id() : c.id},
                           {"function", {{"index", first_index + i}, {"name", c.name}, {"arguments", parse_object_text(c.arguments)}}}});
        }
    }
    return out;
}

} // namespace specd::api
