#pragma once
// Reads a model's answer as it streams in: reasoning, content and tool calls apart, with the
// parser llama.cpp's chat code derived for the template and request (ChatRender::syntax).
// The whole text so far is parsed again on every piece (as llama-server does): answers are
// short next to the cost of generating them.
#include "core/request.h"
#include "engine/chat_template.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

// What an answer added since the last delta.
struct ChatDelta {
    std::string           thinking;
    std::string           content;
    std::vector<ToolCall> tool_calls; // complete calls only

    bool empty() const { return thinking.empty() && content.empty() && tool_calls.empty(); }
};

class ChatOutputParser {
  public:
    explicit ChatOutputParser(std::shared_ptr<const ChatSyntax> syntax);

    // A piece of the answer. Text that may still turn out to be a tag or a tool call is held
    // back until it is known; a tool call is reported once another one follows it or the
    // answer ends.
    ChatDelta push(std::string_view text);
    // The answer has ended: everything not reported yet.
    ChatDelta finish();

  private:
    ChatDelta advance(bool final);

    std::shared_ptr<const ChatSyntax> syntax_;
    std::string                       text_;
    size_t                            thinking_sent_ = 0;
    size_t                            content_sent_  = 0;
    size_t                            calls_sent_    = 0;
};

} // namespace specd::engine
