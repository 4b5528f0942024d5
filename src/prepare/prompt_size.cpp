#include "prepare/prompt_size.h"

#include "core/error.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace specd::prepare {

namespace {

std::string mib(size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
    return buf;
}

} // namespace

size_t prompt_text_limit(int32_t num_ctx) {
    return std::clamp(size_t(std::max(num_ctx, 1)) * k_prompt_bytes_per_ctx_token, k_min_prompt_text_limit,
                      k_max_prompt_text_limit);
}

size_t prompt_text_bytes(const PromptInput & p) {
    size_t n = p.prompt.size() + p.system.size() + p.suffix.size();
    for (const Message & m : p.messages) {
        n += m.content.size() + m.thinking.size();
        for (const ToolCall & c : m.tool_calls) n += c.name.size() + c.arguments.size();
    }
    for (const Tool & t : p.tools) n += t.name.size() + t.description.size() + t.parameters.size();
    return n;
}

void check_prompt_text(const PromptInput & p, int32_t num_ctx) {
    const size_t bytes = prompt_text_bytes(p);
    const size_t limit = prompt_text_limit(num_ctx);
    if (bytes <= limit) return;
    throw bad_request("the prompt is " + mib(bytes) + " of text, more than the " + mib(limit) + " a request may bring with num_ctx " +
                      std::to_string(num_ctx) + " (" + std::to_string(k_prompt_bytes_per_ctx_token) +
                      " bytes per token of context, at least " + mib(k_min_prompt_text_limit) + ", at most " +
                      mib(k_max_prompt_text_limit) + "); truncation would keep only its last " + std::to_string(num_ctx) +
                      " tokens");
}

namespace {

bool is_text_key(std::string_view raw_key) {
    return raw_key == "prompt" || raw_key == "system" || raw_key == "suffix" || raw_key == "content" ||
           raw_key == "thinking" || raw_key == "text" || raw_key == "input";
}

// The decoded UTF-8 length of the escape sequence at `s` (after its backslash), and its raw length.
std::pair<size_t, size_t> escape_length(std::string_view s) {
    if (s.empty() || s[0] != 'u') return {1, 1};
    if (s.size() < 5) return {1, s.size()};
    unsigned cp = 0;
    for (size_t i = 1; i < 5; ++i) {
        const char c = s[i];
        cp = cp * 16 + unsigned(c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0');
    }
    // A surrogate pair is 4 bytes together: 4 for the high half, none for the low one.
    if (cp >= 0xDC00 && cp <= 0xDFFF) return {0, 5};
    if (cp >= 0xD800 && cp <= 0xDBFF) return {4, 5};
    return {cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3, 5};
}

} // namespace

size_t raw_prompt_text_bytes(std::string_view body) {
    // Per open container: an object's current key (and whether a key comes next), or an
    // array, which belongs to the key of the member it is the value of.
    struct Level {
        bool object;
        bool text; // strings here are prompt text
        bool expect_key;
    };
    std::vector<Level> stack;
    bool               pending_text = false; // the key just read is a text key (for a container value)
    size_t             total        = 0;
    for (size_t i = 0; i < body.size(); ++i) {
        const char c = body[i];
        if (c == '"') {
            const size_t start   = i + 1;
            size_t       decoded = 0;
            for (++i; i < body.size() && body[i] != '"'; ++i) {
                if (body[i] != '\\') {
                    ++decoded;
                    continue;
                }
                const auto [bytes, raw] = escape_length(body.substr(i + 1));
                decoded += bytes;
                i += raw;
            }
            if (stack.empty()) continue;
            Level & level = stack.back();
            if (level.object && level.expect_key) {
                level.text       = is_text_key(body.substr(start, i - start));
                level.expect_key = false;
                pending_text     = level.text;
            } else if (level.text) {
                total += decoded;
            }
        } else if (c == '{' || c == '[') {
            const bool text = !stack.empty() && (stack.back().object ? pending_text : stack.back().text);
            stack.push_back({c == '{', c == '[' && text, c == '{'});
            pending_text = false;
        } else if (c == '}' || c == ']') {
            if (!stack.empty()) stack.pop_back();
        } else if (c == ',' && !stack.empty() && stack.back().object) {
            stack.back().expect_key = true;
            stack.back().text       = false;
        }
    }
    return total;
}

void check_raw_prompt_text(std::string_view body) {
    const size_t bytes = raw_prompt_text_bytes(body);
    if (bytes <= k_max_prompt_text_limit) return;
    throw bad_request("the request brings " + mib(bytes) + " of prompt text (prompts, messages, embedding inputs), more than the " +
                      mib(k_max_prompt_text_limit) + " a request may bring with any num_ctx");
}

} // namespace specd::prepare
