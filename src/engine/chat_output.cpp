#include "engine/chat_output.h"

#include "engine/chat_syntax.h"

namespace specd::engine {

namespace {

// The part of `now` past the `sent` bytes already reported, when what was reported is still
// its beginning. A later parse can trim what an earlier one kept (trailing whitespace before
// a tag): what was sent stands, and only text beyond it is new.
std::string tail_after(const std::string & now, size_t & sent) {
    if (now.size() <= sent) return "";
    std::string out = now.substr(sent);
    sent            = now.size();
    return out;
}

} // namespace

ChatOutputParser::ChatOutputParser(std::shared_ptr<const ChatSyntax> syntax) : syntax_(std::move(syntax)) {}

ChatDelta ChatOutputParser::push(std::string_view text) {
    text_ += text;
    return advance(false);
}

ChatDelta ChatOutputParser::finish() { return advance(true); }

ChatDelta ChatOutputParser::advance(bool final) {
    common_chat_msg msg;
    try {
        msg = common_chat_parse(text_, /*is_partial=*/!final, syntax_->params);
    } catch (const std::exception &) {
        if (!final) return {}; // not readable yet: wait for more text
        try {
            // An answer that ends mid-structure (a length stop inside a tool call) still
            // reads as far as it got.
            msg = common_chat_parse(text_, /*is_partial=*/true, syntax_->params);
        } catch (const std::exception &) {
            // Text the format cannot read at all is the answer's content, as it was written
            // (what was reported as content so far was its beginning).
            msg         = {};
            msg.content = thinking_sent_ == 0 ? text_ : "";
        }
    }
    ChatDelta d;
    d.thinking = tail_after(msg.reasoning_content, thinking_sent_);
    d.content  = tail_after(msg.content, content_sent_);
    // While the answer streams, its last call may still be growing.
    const size_t complete = final ? msg.tool_calls.size() : (msg.tool_calls.empty() ? 0 : msg.tool_calls.size() - 1);
    for (; calls_sent_ < complete; ++calls_sent_) {
        const auto & c = msg.tool_calls[calls_sent_];
        d.tool_calls.push_back({c.name, c.arguments.empty() ? "{}" : c.arguments});
    }
    return d;
}

} // namespace specd::engine
