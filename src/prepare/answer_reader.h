#pragma once
// `think` and `tools` meet the model's chat template here, before the request is queued:
// what the template cannot do is a 400; with `think` and `format` the grammar is composed so
// that the answer after the reasoning is bare JSON; and the reader that splits the answer
// into reasoning, content and tool calls is made from the same render the runner will do.
#include "core/answer_part.h"
#include "engine/chat_output.h"
#include "prepare/decoded_request.h"
#include "prepare/go_tool_calls.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace specd::prepare {

// Splits a streamed answer; plain text passes through as content.
class AnswerReader {
  public:
    AnswerReader() = default; // plain text
    explicit AnswerReader(std::shared_ptr<const engine::ChatSyntax> syntax);
    explicit AnswerReader(GoToolCallReader go); // tools under an Ollama Go TEMPLATE

    AnswerPart push(const std::string & text);
    AnswerPart finish();

  private:
    std::unique_ptr<engine::ChatOutputParser> parser_;
    std::unique_ptr<GoToolCallReader>         go_;
};

// `d.request.model` must be resolved. Throws bad_request for `think` on a model whose
// template does not reason, `tools` on one whose template cannot show them, and (not yet
// supported) `think` under an Ollama Go TEMPLATE.
AnswerReader prepare_answer(DecodedRequest & d);

// "tools" and "thinking" for /api/show's capabilities: from the Go TEMPLATE when the model
// has one (whether it uses .Tools), else from the GGUF's Jinja template.
std::vector<std::string> template_capabilities(const std::optional<std::string> & go_template,
                                               const std::string & jinja_source);

} // namespace specd::prepare
