// OpenAI's response shapes: error bodies by status and exception, whole answers, and the
// server-sent event stream of chat and completion chunks.
#include "api/openai_response.h"

#include "api/openai_request.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

namespace {

scheduler::DoneInfo done_with(DoneReason reason, int32_t prompt, int32_t eval) {
    scheduler::DoneInfo d;
    d.result.reason                  = reason;
    d.result.stats.prompt_count      = prompt;
    d.result.stats.prompt_eval_count = 1; // reused from the KV: usage counts the whole prompt
    d.result.stats.eval_count        = eval;
    return d;
}

// "data: {...}\n\n" events -> their payloads ("[DONE]" stays a string).
std::vector<json> sse_payloads(const std::string & text) {
    std::vector<json> out;
    size_t            at = 0;
    while (at < text.size()) {
        EXPECT_EQ(text.compare(at, 6, "data: "), 0) << text.substr(at);
        const size_t end = text.find("\n\n", at);
        EXPECT_NE(end, std::string::npos);
        const std::string data = text.substr(at + 6, end - at - 6);
        out.push_back(data == "[DONE]" ? json(data) : json::parse(data));
        at = end + 2;
    }
    return out;
}

} // namespace

TEST(OpenAIResponse, ErrorShapeFollowsTheStatus) {
    struct Case { int status; const char * type; };
    for (const Case c : {Case{400, "invalid_request_error"}, Case{401, "invalid_request_error"}, Case{413, "invalid_request_error"},
                         Case{404, "not_found_error"}, Case{500, "api_error"}, Case{503, "api_error"}, Case{501, "api_error"}}) {
        const json j = openai_error_json(c.status, "why");
        EXPECT_EQ(j, json({{"error", {{"message", "why"}, {"type", c.type}, {"param", nullptr}, {"code", nullptr}}}})) << c.status;
    }
    // Messages quoting client bytes stay valid UTF-8.
    EXPECT_EQ(openai_error_json(400, "bad \xff")["error"]["message"], "bad \xEF\xBF\xBD");
}

TEST(OpenAIResponse, ExceptionsBecomeStatusAndBody) {
    const auto [s1, b1] = openai_error_of(ParamError("tools", "tools is not supported yet by this server"));
    EXPECT_EQ(s1, 400);
    EXPECT_EQ(b1["error"]["param"], "tools");
    EXPECT_EQ(b1["error"]["type"], "invalid_request_error");
    const auto [s2, b2] = openai_error_of(Error(ErrorKind::not_found, "model \"x\" not found"));
    EXPECT_EQ(s2, 404);
    EXPECT_EQ(b2["error"]["type"], "not_found_error");
    EXPECT_EQ(b2["error"]["code"], "model_not_found");
    const auto [s3, b3] = openai_error_of(Error(ErrorKind::busy, "server busy"));
    EXPECT_EQ(s3, 503);
    EXPECT_EQ(b3["error"]["type"], "api_error");
    const auto [s4, b4] = openai_error_of(std::runtime_error("boom"));
    EXPECT_EQ(s4, 500);
    EXPECT_EQ(b4["error"]["message"], "boom");
    const auto [s5, b5] = openai_error_of(bad_request("invalid JSON: ..."));
    EXPECT_EQ(s5, 400);
    EXPECT_TRUE(b5["error"]["param"].is_null());
}

TEST(OpenAIResponse, WholeChatAndCompletionAnswers) {
    OpenAIWriter chat(OpenAIEndpoint::chat, "tiny:latest", false);
    const json   c = chat.answer_json("Paris.", done_with(DoneReason::stop, 20, 3));
    EXPECT_EQ(c["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
    EXPECT_EQ(c["object"], "chat.completion");
    EXPECT_TRUE(c["created"].is_number_integer());
    EXPECT_EQ(c["model"], "tiny:latest");
    ASSERT_EQ(c["choices"].size(), 1u);
    EXPECT_EQ(c["choices"][0]["index"], 0);
    EXPECT_EQ(c["choices"][0]["message"], json({{"role", "assistant"}, {"content", "Paris."}}));
    EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(c["usage"], json({{"prompt_tokens", 20}, {"completion_tokens", 3}, {"total_tokens", 23}}));

    OpenAIWriter text(OpenAIEndpoint::completion, "tiny:latest", false);
    const json   t = text.answer_json("upon a time", done_with(DoneReason::length, 4, 8));
    EXPECT_EQ(t["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    EXPECT_EQ(t["object"], "text_completion");
    EXPECT_EQ(t["choices"][0]["text"], "upon a time");
    EXPECT_EQ(t["choices"][0]["finish_reason"], "length");
    EXPECT_NE(t["id"], c["id"]);
}

TEST(OpenAIResponse, ChatStreamIsChunksThenDone) {
    OpenAIWriter w(OpenAIEndpoint::chat, "tiny:latest", false);
    EXPECT_STREQ(w.stream_content_type(), "text/event-stream");
    std::string stream = w.chunk_text("Hel"); // in order: the first delta carries the role
    stream += w.chunk_text("lo");
    stream += w.chunk_done(done_with(DoneReason::length, 5, 2));
    const auto events = sse_payloads(stream);
    ASSERT_EQ(events.size(), 4u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(events[i]["id"], w.id());
        EXPECT_EQ(events[i]["object"], "chat.completion.chunk");
        EXPECT_FALSE(events[i].contains("usage"));
    }
    EXPECT_EQ(events[0]["choices"][0]["delta"], json({{"role", "assistant"}, {"content", "Hel"}}));
    EXPECT_TRUE(events[0]["choices"][0]["finish_reason"].is_null());
    EXPECT_EQ(events[1]["choices"][0]["delta"], json({{"content", "lo"}}));
    EXPECT_EQ(events[2]["choices"][0]["delta"], json::object());
    EXPECT_EQ(events[2]["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(events[3], "[DONE]");
}

TEST(OpenAIResponse, IncludeUsageAddsALastChunkWithUsage) {
    OpenAIWriter w(OpenAIEndpoint::completion, "tiny:latest", true);
    std::string  stream = w.chunk_text("a");
    stream += w.chunk_done(done_with(DoneReason::stop, 7, 1));
    const auto events = sse_payloads(stream);
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0]["object"], "text_completion");
    EXPECT_EQ(events[0]["choices"][0]["text"], "a");
    EXPECT_TRUE(events[0]["usage"].is_null());
    EXPECT_EQ(events[1]["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(events[2]["choices"], json::array());
    EXPECT_EQ(events[2]["usage"], json({{"prompt_tokens", 7}, {"completion_tokens", 1}, {"total_tokens", 8}}));
    EXPECT_EQ(events[3], "[DONE]");
}

TEST(OpenAIResponse, ErrorsBeforeAndDuringTheStream) {
    OpenAIWriter w(OpenAIEndpoint::chat, "tiny:latest", false);
    const json   before = w.error_json(ErrorKind::busy, "server busy, please try again.  maximum pending requests exceeded");
    EXPECT_EQ(before["error"]["type"], "api_error");
    EXPECT_EQ(before["error"]["code"], "server_busy");
    const auto during = sse_payloads(w.chunk_error(ErrorKind::internal, "decode failed"));
    ASSERT_EQ(during.size(), 1u);
    EXPECT_EQ(during[0]["error"]["message"], "decode failed");
    EXPECT_EQ(during[0]["error"]["type"], "api_error");
}

TEST(OpenAIResponse, LogprobsInChatAndLegacyCompletionShapes) {
    const std::vector<TokenLogprob> lps = {{"Hi", -0.5f, {{"Hi", -0.5f}, {"Yo", -1.5f}}}, {"\xE2", -0.25f, {}}};
    OpenAIWriter chat(OpenAIEndpoint::chat, "tiny", false);
    const json   c = chat.answer_json("Hi\xE2", done_with(DoneReason::stop, 5, 2), lps)["choices"][0]["logprobs"];
    ASSERT_EQ(c["content"].size(), 2u);
    EXPECT_EQ(c["content"][0]["token"], "Hi");
    EXPECT_FLOAT_EQ(c["content"][0]["logprob"].get<float>(), -0.5f);
    EXPECT_EQ(c["content"][0]["bytes"], json({72, 105}));
    EXPECT_EQ(c["content"][0]["top_logprobs"][1]["token"], "Yo");
    EXPECT_EQ(c["content"][1]["token"], "\xEF\xBF\xBD"); // a partial UTF-8 piece: U+FFFD, exact bytes kept
    EXPECT_EQ(c["content"][1]["bytes"], json({0xE2}));
    EXPECT_EQ(c["content"][1]["top_logprobs"], json::array());
    EXPECT_TRUE(chat.answer_json("", done_with(DoneReason::stop, 5, 0))["choices"][0]["logprobs"].is_null());

    OpenAIWriter text(OpenAIEndpoint::completion, "tiny", false);
    std::string  stream = text.chunk_text("Hi", {lps[0]});
    stream += text.chunk_text("\xE2", {lps[1]});
    const auto   events = sse_payloads(stream);
    const json & first  = events[0]["choices"][0]["logprobs"];
    EXPECT_EQ(first["tokens"], json({"Hi"}));
    EXPECT_EQ(first["top_logprobs"][0].size(), 2u);
    EXPECT_FLOAT_EQ(first["top_logprobs"][0]["Yo"].get<float>(), -1.5f);
    EXPECT_EQ(first["text_offset"], json({0}));
    EXPECT_EQ(events[1]["choices"][0]["logprobs"]["text_offset"], json({2})); // offsets run across chunks
}
