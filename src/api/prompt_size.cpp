#include "api/prompt_size.h"

#include "core/error.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace specd::api {

namespace {

std::string mib(size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
    return buf;
}

} // namespace

size_t prompt_text_limit(int32_t num_ctx) {
    return std::max(k_min_prompt_text_limit, size_t(std::max(num_ctx, 1)) * k_prompt_bytes_per_ctx_token);
}

size_t prompt_text_bytes(const PromptSpec & p) {
    size_t n = p.prompt.size() + p.system.size() + p.suffix.size();
    for (const Message & m : p.messages) {
        n += m.content.size() + m.thinking.size();
        for (const ToolCall & c : m.tool_calls) n += c.name.size() + c.arguments.size();
    }
    for (const Tool & t : p.tools) n += t.name.size() + t.description.size() + t.parameters.size();
    return n;
}

void check_prompt_text(const PromptSpec & p, int32_t num_ctx) {
    const size_t bytes = prompt_text_bytes(p);
    const size_t limit = prompt_text_limit(num_ctx);
    if (bytes <= limit) return;
    throw bad_request("the prompt is " + mib(bytes) + " of text, more than the " + mib(limit) + " a request may bring with num_ctx " +
                      std::to_string(num_ctx) + " (" + std::to_string(k_prompt_bytes_per_ctx_token) +
                      " bytes per token of context, at least " + mib(k_min_prompt_text_limit) +
                      "); truncation would keep only its last " + std::to_string(num_ctx) + " tokens");
}

} // namespace specd::api
