#pragma once
// Ollama's `"""` blocks in the interactive mode: a line that starts with `"""` opens a message
// (or, after `/set system`, a system message) that ends on the line ending with `"""`.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::cli {

class MultilineInput {
  public:
    enum class Kind { prompt, system };

    bool active() const { return kind_.has_value(); }
    Kind kind() const { return kind_.value_or(Kind::prompt); }

    // Opens a block with the text after the opening quotes; returns the whole text at once
    // when the same line closes it (`"""one line"""`).
    std::optional<std::string> open(Kind kind, std::string_view rest);
    // One more line of an open block; returns the whole text when the line closes it. The
    // lines are joined with newlines; empty text beside the quotes adds no line.
    std::optional<std::string> add(std::string_view line);
    void                       cancel();

  private:
    std::optional<Kind>      kind_;
    std::vector<std::string> lines_;
};

} // namespace specd::cli
