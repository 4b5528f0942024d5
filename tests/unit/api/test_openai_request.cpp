// OpenAI /v1 bodies -> GenerateRequest: what each field becomes, and every refusal as a
// ParamError naming its field (table-driven).
#include "api/openai_request.h"

#include "core/base64.h"
#include "core/error.h"
#include "prepare/options.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace specd;
using namespace specd::api;
using namespace specd::prepare;

namespace {

// A w x h 24-bit BMP (the simplest format stb_image reads), for data URLs.
std::string bmp_data_url(int w, int h) {
    const int            row  = (w * 3 + 3) / 4 * 4;
    const uint32_t       size = 54 + uint32_t(row * h);
    std::vector<uint8_t> b    = {'B', 'M'};
    const auto           le32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); };
    const auto           le16 = [&](uint16_t v) { b.push_back(uint8_t(v)); b.push_back(uint8_t(v >> 8)); };
    le32(size), le32(0), le32(54);
    le32(40), le32(uint32_t(w)), le32(uint32_t(h)), le16(1), le16(24), le32(0), le32(uint32_t(row * h)), le32(0), le32(0), le32(0), le32(0);
    b.resize(size, 0x80);
    return "data:image/bmp;base64," + encode_base64(b);
}

json user(json content) { return {{"role", "user"}, {"content", std::move(content)}}; }

json chat_body(json extra = json::object()) {
    json body = {{"model", "tiny"}, {"messages", json::array({user("hi")})}};
    for (auto & [k, v] : extra.items()) body[k] = v;
    return body;
}

// The ParamError `fn` throws: its param and message ({"", ""} when it throws none).
template <class F> std::pair<std::string, std::string> param_error(F fn) {
    try {
        fn();
    } catch (const ParamError & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        return {e.param(), e.what()};
    }
    return {"", ""};
}

} // namespace

TEST(OpenAIRequest, ChatBecomesAChatRequestWithOllamaOptions) {
    const json body = {
        {"model", "tiny"},
        {"messages", {{{"role", "developer"}, {"content", "Be brief."}}, user("Hello"),
                      {{"role", "assistant"}, {"content", nullptr}}, {{"role", "tool"}, {"content", "42"}}}},
        {"temperature", 0}, {"top_p", 0.5}, {"seed", 7}, {"max_tokens", 12}, {"stop", "END"},
        {"frequency_penalty", 0.25}, {"presence_penalty", -0.5}, {"n", 1}, {"user", "someone"},
    };
    const OpenAIRequest r = decode_openai_chat(body);
    const auto &        d = r.decoded;
    EXPECT_EQ(d.model, "tiny");
    EXPECT_FALSE(d.stream); // OpenAI's default
    EXPECT_FALSE(r.include_usage);
    EXPECT_FALSE(d.request.load_only);
    EXPECT_EQ(d.request.prompt.kind, PromptInput::Kind::chat);
    ASSERT_EQ(d.request.prompt.messages.size(), 4u);
    EXPECT_EQ(d.request.prompt.messages[0].role, "system");
    EXPECT_EQ(d.request.prompt.messages[0].content, "Be brief.");
    EXPECT_EQ(d.request.prompt.messages[2].content, "");
    EXPECT_EQ(d.request.prompt.messages[3].role, "tool");
    const json want = {{"temperature", 0}, {"top_p", 0.5}, {"frequency_penalty", 0.25}, {"presence_penalty", -0.5},
                       {"seed", 7}, {"num_predict", 12}, {"stop", {"END"}}};
    EXPECT_EQ(d.options, want) << d.options.dump();
    EXPECT_TRUE(d.request.generate.grammar.empty());
}

TEST(OpenAIRequest, StreamOptionsAndMaxCompletionTokens) {
    const auto r = decode_openai_chat(chat_body({{"stream", true}, {"stream_options", {{"include_usage", true}}},
                                                 {"max_tokens", 5}, {"max_completion_tokens", 9}, {"stop", {"a", "b"}}}));
    EXPECT_TRUE(r.decoded.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_EQ(r.decoded.options["num_predict"], 9);
    EXPECT_EQ(r.decoded.options["stop"], json({"a", "b"}));
}

TEST(OpenAIRequest, ContentPartsJoinTextAndKeepImagesInOrder) {
    const json body = chat_body({{"messages", {
        user({{{"type", "text"}, {"text", "Look:"}}, {{"type", "image_url"}, {"image_url", {{"url", bmp_data_url(3, 2)}}}},
              {{"type", "image_url"}, {"image_url", bmp_data_url(5, 1)}}, {{"type", "text"}, {"text", "What?"}}}),
        {{"role", "assistant"}, {"content", {{{"type", "text"}, {"text", "A picture."}}}}},
        user({{{"type", "image_url"}, {"image_url", {{"url", bmp_data_url(1, 4)}, {"detail", "low"}}}}}),
    }}});
    const auto & p = decode_openai_chat(body).decoded.request.prompt;
    ASSERT_EQ(p.messages.size(), 3u);
    EXPECT_EQ(p.messages[0].content, "Look:\nWhat?");
    ASSERT_EQ(p.messages[0].images.size(), 2u);
    EXPECT_EQ(p.messages[0].images[0]->width, 3);
    EXPECT_EQ(p.messages[0].images[1]->width, 5);
    EXPECT_EQ(p.messages[1].content, "A picture.");
    EXPECT_TRUE(p.messages[1].images.empty());
    ASSERT_EQ(p.messages[2].images.size(), 1u);
    EXPECT_EQ(p.messages[2].images[0]->height, 4);
    EXPECT_EQ(p.all_images().size(), 3u);
}

TEST(OpenAIRequest, ResponseFormatBecomesTheFormatGrammar) {
    EXPECT_TRUE(decode_openai_chat(chat_body({{"response_format", {{"type", "text"}}}})).decoded.request.generate.grammar.empty());
    const auto obj = decode_openai_chat(chat_body({{"response_format", {{"type", "json_object"}}}})).decoded.request.generate;
    EXPECT_EQ(obj.grammar, format_grammar("json"));
    EXPECT_TRUE(obj.end_on_complete_json);
    const json schema = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};
    const auto js = decode_openai_chat(chat_body({{"response_format", {{"type", "json_schema"},
        {"json_schema", {{"name", "place"}, {"strict", true}, {"schema", schema}}}}}})).decoded.request.generate;
    EXPECT_EQ(js.grammar, format_grammar(schema));
    EXPECT_TRUE(js.end_on_complete_json);
}

TEST(OpenAIRequest, RefusalsNameTheirField) {
    const json remote = user({{{"type", "image_url"}, {"image_url", {{"url", "https://example.com/cat.png"}}}}});
    struct Case { json body; std::string param; std::string needle; };
    const std::vector<Case> cases = {
        {{{"messages", {user("x")}}}, "model", "model is required"},
        {chat_body({{"model", 5}}), "model", "model is required"},
        {chat_body({{"messages", json::array()}}), "messages", "non-empty array"},
        {chat_body({{"messages", "hi"}}), "messages", "non-empty array"},
        {chat_body({{"messages", {{{"content", "x"}}}}}), "messages[0].role", "role is required"},
        {chat_body({{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}), "messages[0].role", "invalid role"},
        {chat_body({{"messages", {user(7)}}}), "messages[0].content", "string or an array"},
        {chat_body({{"messages", {user({{{"type", "input_audio"}}})}}}), "messages[0].content[0].type", "input_audio"},
        {chat_body({{"messages", {user({{{"type", "text"}, {"text", 1}}})}}}), "messages[0].content[0].text", "must be a string"},
        {chat_body({{"messages", {user("a"), remote}}}), "messages[1].content[0].image_url.url", "only data URLs"},
        {chat_body({{"messages", {user({{{"type", "image_url"}, {"image_url", {{"url", "data:text/plain;base64,aGk="}}}}})}}}),
         "messages[0].content[0].image_url.url", "data:image/<type>;base64"},
        {chat_body({{"messages", {{{"role", "assistant"}, {"tool_calls", {{{"id", "1"}}}}}}}}), "messages[0].tool_calls", "function must be an object"},
        {chat_body({{"tools", {{{"type", "function"}}}}}), "tools", "tools[0].function must be an object"},
        {chat_body({{"reasoning_effort", "max"}}), "reasoning_effort", "must be \"none\""},
        {chat_body({{"tool_choice", "required"}}), "tool_choice", "no tools"},
        {chat_body({{"tool_choice", "sometimes"}}), "tool_choice", "tool_choice must be"},
        {chat_body({{"tool_choice", {{"type", "function"}}}}), "tool_choice", "must name its function"},
        {chat_body({{"functions", {{{"name", "f"}}}}}), "functions", "not supported yet"},
        {chat_body({{"logprobs", 1}}), "logprobs", "must be a boolean"},
        {chat_body({{"top_logprobs", 3}}), "top_logprobs", "requires logprobs"},
        {chat_body({{"logprobs", true}, {"top_logprobs", 21}}), "top_logprobs", "from 0 to 20"},
        {chat_body({{"logprobs", true}, {"top_logprobs", -1}}), "top_logprobs", "from 0 to 20"},
        {chat_body({{"logit_bias", {{"50256", -101}}}}), "logit_bias", "from -100 to 100"},
        {chat_body({{"modalities", {"text", "audio"}}}), "modalities", "not supported yet"},
        {chat_body({{"n", 2}}), "n", "n must be 1"},
        {chat_body({{"temperature", 2.5}}), "temperature", "from 0 to 2"},
        {chat_body({{"temperature", "hot"}}), "temperature", "must be a number"},
        {chat_body({{"top_p", 1.5}}), "top_p", "from 0 to 1"},
        {chat_body({{"presence_penalty", -3}}), "presence_penalty", "from -2 to 2"},
        {chat_body({{"frequency_penalty", 3}}), "frequency_penalty", "from -2 to 2"},
        {chat_body({{"seed", 1.5}}), "seed", "must be an integer"},
        {chat_body({{"max_tokens", 0}}), "max_tokens", "from 1 to"},
        {chat_body({{"max_completion_tokens", 1 << 25}}), "max_completion_tokens", "from 1 to"},
        {chat_body({{"stop", 5}}), "stop", "string or an array"},
        {chat_body({{"stop", {"ok", ""}}}), "stop", "none of them empty"},
        {chat_body({{"stream", "yes"}}), "stream", "must be a boolean"},
        {chat_body({{"stream_options", {{"include_usage", 1}}}}), "stream_options.include_usage", "must be a boolean"},
        {chat_body({{"response_format", "json"}}), "response_format", "must be an object"},
        {chat_body({{"response_format", {{"type", "xml"}}}}), "response_format.type", "\"xml\""},
        {chat_body({{"response_format", {{"type", "json_schema"}}}}), "response_format.json_schema", "must be an object"},
        {chat_body({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "nonsense"}}}}}}}}),
         "response_format.json_schema.schema", ""},
    };
    for (const auto & c : cases) {
        const auto [param, message] = param_error([&] { decode_openai_chat(c.body); });
        EXPECT_EQ(param, c.param) << c.body.dump() << " -> " << message;
        EXPECT_NE(message.find(c.needle), std::string::npos) << c.body.dump() << " -> " << message;
    }
}

TEST(OpenAIRequest, DefaultsAndNullsAreAccepted) {
    // What OpenAI's clients send for unset fields, and values that ask for nothing extra.
    const auto r = decode_openai_chat(chat_body({{"tools", json::array()}, {"tool_choice", "none"}, {"logprobs", false},
                                                 {"top_logprobs", 0}, {"logit_bias", json::object()}, {"n", 1},
                                                 {"temperature", nullptr}, {"stop", nullptr}, {"response_format", nullptr},
                                                 {"modalities", {"text"}}, {"metadata", {{"k", "v"}}}}));
    EXPECT_EQ(r.decoded.options, json::object());
}

TEST(OpenAIRequest, LogprobsBecomeTheAlternativesCount) {
    const auto chat = [](json extra) { return decode_openai_chat(chat_body(extra)).decoded.request.generate.logprobs; };
    EXPECT_EQ(chat(json::object()), -1);
    EXPECT_EQ(chat({{"logprobs", false}, {"top_logprobs", 0}}), -1);
    EXPECT_EQ(chat({{"logprobs", true}}), 0);
    EXPECT_EQ(chat({{"logprobs", true}, {"top_logprobs", 20}}), 20);
    const auto completion = [](json lp) {
        return decode_openai_completion({{"model", "m"}, {"prompt", "x"}, {"logprobs", lp}}).decoded.request.generate.logprobs;
    };
    EXPECT_EQ(completion(nullptr), -1);
    EXPECT_EQ(completion(false), -1);
    EXPECT_EQ(completion(0), 0);
    EXPECT_EQ(completion(5), 5);
}

TEST(OpenAIRequest, ImageCountIsCheckedBeforeDecoding) {
    json parts = json::array();
    for (int i = 0; i < 17; ++i) parts.push_back({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,%%%"}}}});
    const auto [param, message] = param_error([&] { decode_openai_chat(chat_body({{"messages", {user(parts)}}})); });
    EXPECT_EQ(param, "messages");
    EXPECT_NE(message.find("max_images"), std::string::npos) << message;
    // An image that does not decode is named by where it is, and by its number in the request.
    const json bad = user({{{"type", "image_url"}, {"image_url", {{"url", bmp_data_url(2, 2)}}}},
                           {{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,aGk="}}}}});
    const auto [p2, m2] = param_error([&] { decode_openai_chat(chat_body({{"messages", {bad}}})); });
    EXPECT_EQ(p2, "messages[0].content[1].image_url.url");
    EXPECT_NE(m2.find("image 2"), std::string::npos) << m2;
}

TEST(OpenAIRequest, CompletionBecomesAGenerateRequest) {
    const auto r = decode_openai_completion({{"model", "tiny"}, {"prompt", "Once upon"}, {"suffix", " the end"},
                                             {"max_tokens", 4}, {"stream", true}, {"logprobs", nullptr}, {"echo", false}});
    EXPECT_EQ(r.decoded.request.prompt.kind, PromptInput::Kind::generate);
    EXPECT_EQ(r.decoded.request.prompt.prompt, "Once upon");
    EXPECT_EQ(r.decoded.request.prompt.suffix, " the end");
    EXPECT_FALSE(r.decoded.request.load_only);
    EXPECT_TRUE(r.decoded.stream);
    EXPECT_EQ(r.decoded.options["num_predict"], 4);
    EXPECT_EQ(decode_openai_completion({{"model", "m"}, {"prompt", {"one"}}}).decoded.request.prompt.prompt, "one");

    struct Case { json body; std::string param; };
    const std::vector<Case> cases = {
        {{{"model", "m"}}, "prompt"},
        {{{"model", "m"}, {"prompt", ""}}, "prompt"},
        {{{"model", "m"}, {"prompt", {"a", "b"}}}, "prompt"},
        {{{"model", "m"}, {"prompt", {1, 2, 3}}}, "prompt"},
        {{{"model", "m"}, {"prompt", "x"}, {"suffix", 3}}, "suffix"},
        {{{"model", "m"}, {"prompt", "x"}, {"echo", true}}, "echo"},
        {{{"model", "m"}, {"prompt", "x"}, {"best_of", 2}}, "best_of"},
        {{{"model", "m"}, {"prompt", "x"}, {"logprobs", 21}}, "logprobs"},
        {{{"model", "m"}, {"prompt", "x"}, {"logprobs", true}}, "logprobs"},
        {{{"model", "m"}, {"prompt", "x"}, {"top_logprobs", 2}}, "top_logprobs"},
        {{{"model", "m"}, {"prompt", "x"}, {"n", 3}}, "n"},
    };
    for (const auto & c : cases) {
        EXPECT_EQ(param_error([&] { decode_openai_completion(c.body); }).first, c.param) << c.body.dump();
    }
}

TEST(OpenAIRequest, AcceptedOptionsAlwaysApply) {
    // The translation's ranges lie within apply_options's: an accepted request never gets an
    // error naming an Ollama option the client did not send.
    for (const json & extremes : {json{{"temperature", 0}, {"top_p", 0}, {"seed", INT64_MIN}, {"max_tokens", 1},
                                       {"frequency_penalty", -2}, {"presence_penalty", -2}},
                                  json{{"temperature", 2}, {"top_p", 1}, {"seed", INT64_MAX}, {"max_tokens", k_max_num_predict},
                                       {"frequency_penalty", 2}, {"presence_penalty", 2}, {"stop", {"\n", "END"}}}}) {
        OpenAIRequest r = decode_openai_chat(chat_body(extremes));
        EXPECT_NO_THROW(apply_options(models::Parameters{}, r.decoded.options, r.decoded.request, r.decoded.warnings))
            << extremes.dump();
        EXPECT_TRUE(r.decoded.warnings.empty()) << extremes.dump();
    }
    OpenAIRequest r = decode_openai_chat(chat_body({{"temperature", 0}, {"max_tokens", 3}, {"seed", 9}, {"stop", "x"}}));
    apply_options(models::Parameters{}, r.decoded.options, r.decoded.request, r.decoded.warnings);
    EXPECT_EQ(r.decoded.request.generate.sampling.temperature, 0.0f);
    EXPECT_EQ(r.decoded.request.generate.num_predict, 3);
    EXPECT_EQ(r.decoded.request.generate.sampling.seed, 9);
    EXPECT_EQ(r.decoded.request.generate.stop, std::vector<std::string>{"x"});
}

TEST(OpenAIRequest, LogitBiasIsReadAsTokenIdsAndBiases) {
    OpenAIRequest r = decode_openai_chat(chat_body({{"logit_bias", {{"15", -100}, {"7", 2.5}}}}));
    auto bias = r.decoded.request.generate.sampling.logit_bias;
    std::sort(bias.begin(), bias.end());
    EXPECT_EQ(bias, (std::vector<std::pair<int32_t, float>>{{7, 2.5f}, {15, -100.0f}}));
    EXPECT_TRUE(decode_openai_chat(chat_body({{"logit_bias", json::object()}})).decoded.request.generate.sampling.logit_bias.empty());
    for (const json & bad : {json{{"x", 1}}, json{{"-3", 1}}, json{{"12", 101}}, json{{"12", "high"}}, json{{"1.5", 1}},
                             json::array({1, 2})}) {
        EXPECT_EQ(param_error([&] { decode_openai_chat(chat_body({{"logit_bias", bad}})); }).first, "logit_bias") << bad.dump();
    }
}

TEST(OpenAIRequest, ReasoningEffortInEitherForm) {
    const auto think = [](const json & extra) { return decode_openai_chat(chat_body(extra)).decoded.request.prompt.think; };
    ASSERT_TRUE(think({{"reasoning", {{"effort", "low"}}}}));
    EXPECT_TRUE(think({{"reasoning", {{"effort", "low"}}}})->enabled);
    EXPECT_EQ(think({{"reasoning", {{"effort", "low"}}}})->effort, "low");
    EXPECT_FALSE(think({{"reasoning", {{"effort", "none"}}}})->enabled);
    // reasoning_effort wins over reasoning.effort.
    EXPECT_EQ(think({{"reasoning_effort", "high"}, {"reasoning", {{"effort", "low"}}}})->effort, "high");
    EXPECT_EQ(param_error([&] { decode_openai_chat(chat_body({{"reasoning", {{"effort", "max"}}}})); }).first, "reasoning.effort");
    EXPECT_EQ(param_error([&] { decode_openai_chat(chat_body({{"reasoning", "low"}})); }).first, "reasoning");
}

TEST(OpenAIRequest, AToolResultIsTiedToItsCallById) {
    const json body = {{"model", "m"},
                       {"messages",
                        {{{"role", "user"}, {"content", "weather?"}},
                         {{"role", "assistant"},
                          {"content", nullptr},
                          {"tool_calls",
                           {{{"id", "call_a"}, {"type", "function"}, {"function", {{"name", "get_weather"}, {"arguments", "{}"}}}},
                            {{"id", "call_b"}, {"type", "function"}, {"function", {{"name", "get_time"}, {"arguments", "{}"}}}}}}},
                         {{"role", "tool"}, {"tool_call_id", "call_b"}, {"content", "noon"}},
                         {{"role", "tool"}, {"tool_call_id", "call_a"}, {"content", "sunny"}},
                         {{"role", "tool"}, {"tool_call_id", "call_x"}, {"name", "lookup"}, {"content", "?"}}}}};
    const auto & m = decode_openai_chat(body).decoded.request.prompt.messages;
    ASSERT_EQ(m.size(), 5u);
    EXPECT_EQ(m[1].tool_calls.at(0).id, "call_a");
    EXPECT_EQ(m[2].tool_call_id, "call_b");
    EXPECT_EQ(m[2].tool_name, "get_time");
    EXPECT_EQ(m[3].tool_name, "get_weather");
    EXPECT_EQ(m[4].tool_name, "lookup"); // named by the message itself
    json bad = body;
    bad["messages"][2]["tool_call_id"] = 5;
    EXPECT_EQ(param_error([&] { decode_openai_chat(bad); }).first, "messages[2].tool_call_id");
}
