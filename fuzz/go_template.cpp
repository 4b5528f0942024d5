// Ollama's Go templates (templates::GoTemplate): arbitrary bytes as a template; what parses
// is rendered against a small fixed conversation (a system prompt, three messages, a tool
// and a tool call), as Ollama would pass it. Asserts:
//  - a template that fails, to parse or to render, fails with specd::Error(bad_request)
//    (any other exception escapes and is a finding, as is a crash, UB, a hang);
//  - the rendering stays within max_output_bytes;
//  - rendering is repeatable (the parsed template is only read) and vars() works.
// The limits are smaller than the defaults so that each input runs fast.
#include "core/error.h"
#include "templates/go_template.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

using specd::templates::GoTemplate;
using specd::templates::GoTemplateLimits;
using json = nlohmann::ordered_json;

namespace {

void check(bool ok, const char * what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz-go_template: %s\n", what);
        __builtin_trap();
    }
}

const json & conversation() {
    static const json data = json::parse(R"({
        "System": "You are a helpful assistant.",
        "Messages": [
            {"Role": "system", "Content": "You are a helpful assistant.", "Thinking": "", "Images": [],
             "ToolCalls": [], "ToolName": "", "ToolCallID": ""},
            {"Role": "user", "Content": "What is the weather in Paris?", "Thinking": "", "Images": [],
             "ToolCalls": [], "ToolName": "", "ToolCallID": ""},
            {"Role": "assistant", "Content": "", "Thinking": "Let me check.", "Images": [],
             "ToolCalls": [{"ID": "call_1", "Function": {"Index": 0, "Name": "get_weather",
                                                          "Arguments": {"city": "Paris", "days": 2}}}],
             "ToolName": "", "ToolCallID": ""},
            {"Role": "tool", "Content": "22 C <sunny> & \"dry\"", "Thinking": "", "Images": [],
             "ToolCalls": [], "ToolName": "get_weather", "ToolCallID": "call_1"}
        ],
        "Tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
                   "parameters": {"type": "object", "required": ["city"],
                                  "properties": {"city": {"type": "string", "description": "The city"},
                                                 "days": {"type": ["integer", "null"]}}}}}],
        "Prompt": "", "Suffix": "", "Response": "", "Think": true, "ThinkLevel": "high", "IsThinkSet": true,
        "Numbers": [0, -1, 1.5, 1e21, 1e-7, 9007199254740993]
    })");
    return data;
}

GoTemplateLimits limits() {
    GoTemplateLimits l;
    l.max_output_bytes     = 64 * 1024;
    l.max_function_bytes   = 1 << 20;
    l.max_range_iterations = 10000;
    l.max_steps            = 100000;
    return l;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static const GoTemplateLimits lim = limits();
    const std::string_view        text(reinterpret_cast<const char *>(data), size);

    std::optional<GoTemplate> t;
    try {
        t.emplace(GoTemplate::parse(text, lim));
    } catch (const specd::Error & e) {
        check(e.kind() == specd::ErrorKind::bad_request, "a parse error that is not bad_request");
        return 0;
    }
    check(t->source() == text, "the template does not keep its source");
    t->vars();

    std::string first;
    try {
        first = t->render(conversation());
    } catch (const specd::Error & e) {
        check(e.kind() == specd::ErrorKind::bad_request, "a render error that is not bad_request");
        return 0;
    }
    check(first.size() <= lim.max_output_bytes, "the output is over max_output_bytes");
    // currentDate / yesterdayDate could change between the two renders at midnight; the
    // fixed-size dates keep the length.
    check(t->render(conversation()).size() == first.size(), "a second render differs");
    return 0;
}
