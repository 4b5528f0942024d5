#include "cli/multiline_input.h"

namespace specd::cli {

namespace {

constexpr std::string_view k_quotes = R"(""")";

} // namespace

std::optional<std::string> MultilineInput::open(Kind kind, std::string_view rest) {
    kind_ = kind;
    lines_.clear();
    // The first line's text only counts when there is some: `"""` alone adds no empty line.
    if (rest.size() >= k_quotes.size() && rest.substr(rest.size() - k_quotes.size()) == k_quotes) return add(rest);
    if (!rest.empty()) lines_.emplace_back(rest);
    return std::nullopt;
}

std::optional<std::string> MultilineInput::add(std::string_view line) {
    const bool closes = line.size() >= k_quotes.size() && line.substr(line.size() - k_quotes.size()) == k_quotes;
    if (!closes) {
        lines_.emplace_back(line);
        return std::nullopt;
    }
    line.remove_suffix(k_quotes.size());
    if (!line.empty()) lines_.emplace_back(line);
    std::string text;
    for (size_t i = 0; i < lines_.size(); ++i) text += (i ? "\n" : "") + lines_[i];
    cancel();
    return text;
}

void MultilineInput::cancel() {
    kind_.reset();
    lines_.clear();
}

} // namespace specd::cli
