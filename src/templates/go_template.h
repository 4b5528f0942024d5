#pragma once
// Ollama's prompt templates: Go's text/template syntax, parsed once (when a model is
// created) and rendered for each request against plain JSON data, the values Ollama gives
// its templates: {"System": ..., "Messages": [{"Role": ..., "Content": ..., "ToolCalls":
// [...]}], "Tools": [...], "Prompt": ..., "Response": ..., "Think": ...}. The data's shape is
// the caller's; this module only evaluates. docs/templates.md lists what is supported, how
// values print and the limits.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd::templates {

// Bounds on what one template may cost; breaking one is a bad_request naming it.
struct GoTemplateLimits {
    size_t   max_template_bytes   = 256 * 1024; // source text
    int      max_nesting_depth    = 100;        // if / range / with bodies and parentheses, nested
    size_t   max_output_bytes     = 16u << 20;  // rendered text
    size_t   max_function_bytes   = 64u << 20;  // bytes functions make or compare (printf, json, eq) in one render
    size_t   max_variables        = 100;        // variables in scope at once (each use searches them)
    uint64_t max_range_iterations = 1'000'000;  // all range loops of one render together
    uint64_t max_steps            = 10'000'000; // nodes walked and commands run in one render
};

class GoTemplate {
  public:
    // Throws specd::Error(bad_request) "invalid template: line L, column C: <what>".
    static GoTemplate parse(std::string_view text, const GoTemplateLimits & limits = {});

    // Throws specd::Error(bad_request) "cannot render template: line L, column C: <what>" for
    // errors Go reports while executing (a bad index, a wrong argument, ...) and for limits.
    // Thread-safe: rendering only reads the parsed template.
    std::string render(const nlohmann::ordered_json & data) const;

    const std::string & source() const;

    // Ollama's Template.Vars(): the field and variable names the template mentions,
    // lower-cased and sorted. Ollama renders with .Messages when it holds "messages", and
    // appends {{ .Response }} to a template that has neither "messages" nor "response".
    std::vector<std::string> vars() const;

  private:
    GoTemplate() = default;
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

} // namespace specd::templates
