#pragma once
// `think` with `format`: a grammar for a reasoning block followed by the constrained answer,
// so that the answer after the block is bare JSON and the block itself stays free text.
// Speculation needs nothing new: the engine drafts under any grammar, and the end tag and the
// separator are forced text it proposes for free.
#include <cstdint>
#include <optional>
#include <string>

namespace specd::grammar {

struct ThinkingBlock {
    std::string open;             // "<think>"; empty when the prompt already opened the block
    std::string close;            // "</think>"
    std::string separator = "\n\n"; // between the block and the answer, as the templates write it
    // The most characters the reasoning may take before `close` is forced; unset: unbounded.
    std::optional<int64_t> budget_chars;
};

// `answer` (GBNF with root rule "root") after the block. The reasoning cannot contain the
// first character of `close` (for "</think>", no '<'): a block that could hold its own end
// tag could end earlier than the grammar thinks, and the answer would then start inside it.
// Throws specd::Error(bad_request) when `close` is empty.
std::string thinking_then(const std::string & answer, const ThinkingBlock & block);

} // namespace specd::grammar
