#pragma once
// The parser parameters behind ChatRender::syntax: shared by chat_template.cpp, which makes
// them, and chat_output.cpp, which reads answers with them. Includes llama.cpp's chat.h, so
// only engine/ sources include this.
#include <chat.h>

namespace specd::engine {

struct ChatSyntax {
    common_chat_parser_params params;
};

} // namespace specd::engine
