// The prompt-text limit: 64 bytes per token of context, at least 4 MiB, at most 16 MiB, over
// every text a template renders (and, before parsing, over a raw body's prompt-text keys),
// refused with a message that names the limit.
#include "core/error.h"
#include "prepare/prompt_size.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::prepare;

TEST(PromptSize, LimitGrowsWithTheContext) {
    EXPECT_EQ(prompt_text_limit(4096), size_t(4) << 20);
    EXPECT_EQ(prompt_text_limit(1), size_t(4) << 20);
    EXPECT_EQ(prompt_text_limit(131072), size_t(8) << 20);
    EXPECT_EQ(prompt_text_limit(1 << 24), size_t(16) << 20);
}

TEST(PromptSize, CountsEveryRenderedText) {
    PromptInput p;
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
    PromptInput p;
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

// The raw scan counts decoded bytes under the prompt-text keys only, at any depth.
TEST(PromptSize, RawBodiesCountThePromptTextKeys) {
    const struct {
        const char * body;
        size_t       bytes;
    } cases[] = {
        {R"({"model":"m","prompt":"hello"})", 5},
        {R"({"prompt":"a\nb\u00e9\u20ac\ud83d\ude00"})", 1 + 1 + 1 + 2 + 3 + 4},
        {R"({"messages":[{"role":"user","content":"abc","images":["QUJD"]},{"role":"assistant","content":"de","thinking":"f"}]})", 6},
        {R"({"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:xyz"}}]}]})", 2},
        {R"({"prompt":["ab","cd"],"system":"s","suffix":"x","options":{"stop":["zzz"]},"format":{"type":"string"}})", 6},
        {R"({"model":"content","template":"prompt","keep_alive":"5m"})", 0},
        {R"({"content":null,"x":{"y":"not text"},"prompt":"p"})", 1},
        {R"({"model":"m","input":"abcd","truncate":true})", 4},
        {R"({"model":"m","input":["ab","c"],"dimensions":8})", 3},
    };
    for (const auto & c : cases) EXPECT_EQ(raw_prompt_text_bytes(c.body), c.bytes) << c.body;

    std::string big = R"({"model":"m","prompt":")" + std::string(k_max_prompt_text_limit + 1, 'x') + "\"}";
    EXPECT_THROW(check_raw_prompt_text(big), Error);
    big = R"({"model":"m","input":[")" + std::string(k_max_prompt_text_limit / 2, 'x') + R"(",")" +
          std::string(k_max_prompt_text_limit / 2 + 1, 'x') + "\"]}";
    EXPECT_THROW(check_raw_prompt_text(big), Error);
    big = R"({"model":"m","images":[")" + std::string(k_max_prompt_text_limit + 1, 'x') + "\"]}";
    EXPECT_NO_THROW(check_raw_prompt_text(big));
}
