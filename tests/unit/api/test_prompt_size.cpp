// The prompt-text limit: max(4 MiB, 64 bytes per token of context), over every text a
// template renders, refused with a message that names the limit.
#include "api/prompt_size.h"
#include "core/error.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

TEST(PromptSize, LimitGrowsWithTheContext) {
    EXPECT_EQ(prompt_text_limit(4096), size_t(4) << 20);
    EXPECT_EQ(prompt_text_limit(1), size_t(4) << 20);
    EXPECT_EQ(prompt_text_limit(131072), size_t(8) << 20);
    EXPECT_EQ(prompt_text_limit(1 << 24), size_t(1) << 30);
}

TEST(PromptSize, CountsEveryRenderedText) {
    PromptSpec p;
    p.prompt = "abc";
    p.system = "de";
    p.suffix = "f";
    p.messages.push_back({.role = "user", .content = "1234"});
    Message m{.role = "assistant", .content = "xy"};
    m.thinking   = "t";
    m.tool_calls = {{"fn", "{}"}};
    p.messages.push_back(m);
    p.tools = {{"tool", "does", "{\"type\":\"object\"}"}};
    EXPECT_EQ(prompt_text_bytes(p), 3u + 2 + 1 + 4 + 2 + 1 + 2 + 2 + 4 + 4 + 17);
}

TEST(PromptSize, OverTheLimitIsABadRequestNamingIt) {
    PromptSpec p;
    p.prompt.assign((size_t(4) << 20) + 1, 'x');
    EXPECT_NO_THROW(check_prompt_text(p, 65536 + 1));
    try {
        check_prompt_text(p, 4096);
        FAIL() << "expected a bad_request";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        EXPECT_NE(std::string(e.what()).find("4.0 MiB"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("num_ctx 4096"), std::string::npos) << e.what();
    }
    p.prompt.assign(size_t(4) << 20, 'x');
    EXPECT_NO_THROW(check_prompt_text(p, 4096));
}
