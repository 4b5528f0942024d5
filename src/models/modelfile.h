#pragma once
// Ollama's Modelfile: FROM, PARAMETER, SYSTEM, TEMPLATE, LICENSE, MESSAGE, ADAPTER, DRAFT.
// Syntax follows Ollama's parser: instructions are case-insensitive, '#' starts a comment
// line, a value runs to the end of its line or is quoted with "..." or """...""" (both may
// span lines; no escape sequences, as in Ollama). The parser keeps everything it reads, even
// instructions the store does not support yet (TEMPLATE, ADAPTER): rejecting them is policy
// for the store/caller, not syntax.
#include "models/parameters.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace specd::models {

struct ModelfileMessage {
    std::string role; // "system", "user" or "assistant"
    std::string content;

    bool operator==(const ModelfileMessage &) const = default;
};

struct Modelfile {
    // In order: the first is the model (a GGUF path or a model name), a second one is the
    // vision projector.
    std::vector<std::string>      from;
    std::optional<std::string>    draft; // speculation draft model (a GGUF path or a model name)
    Parameters                    params;
    std::optional<std::string>    system;        // the last SYSTEM wins, as in Ollama
    std::optional<std::string>    template_text; // the last TEMPLATE wins
    std::vector<std::string>      licenses;
    std::vector<ModelfileMessage> messages;
    std::vector<std::string>      adapters;
    // Ollama's RENDERER, PARSER and REQUIRES: stored in the config (ModelConfig), not used.
    std::optional<std::string>    renderer;
    std::optional<std::string>    parser;
    std::optional<std::string>    requires_version;

    bool operator==(const Modelfile &) const = default;
};

class ModelfileError : public std::runtime_error {
  public:
    // line: 1-based; 0 when the error is about the whole file (no FROM).
    ModelfileError(int line, const std::string & reason);
    int line() const { return line_; }
    const std::string & reason() const { return reason_; }

  private:
    int         line_;
    std::string reason_;
};

// Throws ModelfileError; what() reads "line N: <reason>".
Modelfile parse_modelfile(std::string_view text);

// A value as the parser reads it back: bare when that is unambiguous, else "..." or
// """...""". Throws std::invalid_argument for the rare text neither quoting can hold.
std::string quote_modelfile_value(std::string_view value);

// A Modelfile that parse_modelfile() reads back to `mf`.
std::string format_modelfile(const Modelfile & mf);

} // namespace specd::models
