#include "api/ollama_request.h"

#include "core/error.h"
#include "prepare/options.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace specd;
using namespace specd::api;
using namespace specd::prepare;

namespace {

// apply_options for the tests that do not look at its warnings.
void apply_options(const models::Parameters & model, const json & options, GenerateRequest & r) {
    std::vector<std::string> warnings;
    prepare::apply_options(model, options, r, warnings);
}

// The message of the bad_request that `fn` throws ("" when it does not throw one).
template <class F> std::string bad_request_message(F fn) {
    try {
        fn();
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
        return e.what();
    }
    return "";
}

} // namespace

TEST(OllamaRequest, GenerateDefaults) {
    auto d = decode_generate(json{{"model", "tiny"}, {"prompt", "hi"}});
    EXPECT_EQ(d.model, "tiny");
    EXPECT_TRUE(d.stream);
    EXPECT_FALSE(d.request.load_only);
    EXPECT_TRUE(d.request.generate.truncate);
    EXPECT_TRUE(d.request.generate.grammar.empty());
}

TEST(OllamaRequest, EmptyPromptOnlyLoads) {
    EXPECT_TRUE(decode_generate(json{{"model", "tiny"}}).request.load_only);
    EXPECT_TRUE(decode_chat(json{{"model", "tiny"}, {"messages", json::array()}}).request.load_only);
}

TEST(OllamaRequest, RejectsWrongTypesAndUnknownRoles) {
    struct Case { json body; bool chat; std::string needle; };
    const std::vector<Case> cases = {
        {{{"prompt", "x"}}, false, "model is required"},
        {{{"model", 3}}, false, "model must be a string"},
        {{{"model", "m"}, {"prompt", 5}}, false, "prompt must be a string"},
        {{{"model", "m"}, {"stream", "yes"}}, false, "stream must be a boolean"},
        {{{"model", "m"}, {"options", json::array()}}, false, "options must be an object"},
        {{{"model", "m"}, {"format", "xml"}}, false, "invalid format"},
        {{{"model", "m"}, {"format", 7}}, false, "invalid format"},
        {{{"model", "m"}, {"context", {1, "a"}}}, false, "context"},
        {{{"model", "m"}, {"images", {"aGk="}}}, false, "image 1 is not a recognised image format"},
        {{{"model", "m"}, {"images", {"%%%"}}}, false, "image 1 is not valid base64"},
        {{{"model", "m"}, {"images", "aGk="}}, false, "images must be an array"},
        {{{"model", "m"}, {"images", {7}}}, false, "base64 strings"},
        {{{"model", "m"}, {"images", json(std::vector<std::string>(17, "aGk="))}}, false, "max_images"},
        {{{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "x"}, {"images", {"aGk=", "%"}}}}}}, true,
         "image 1 is not a recognised"},
        {{{"model", "m"}, {"think", "max"}}, false, "think must be a boolean or"},
        {{{"model", "m"}, {"think", 1}}, true, "think must be a boolean or"},
        {{{"model", "m"}, {"think", true}, {"raw", true}}, false, "think cannot be combined with raw"},
        {{{"model", "m"}, {"think", "low"}, {"prompt", "a"}, {"suffix", "b"}}, false, "think cannot be combined with suffix"},
        {{{"model", "m"}, {"think", true}, {"thinking_budget_chars", 10}}, false, "needs think and format"},
        {{{"model", "m"}, {"format", "json"}, {"thinking_budget_chars", 10}}, true, "needs think and format"},
        {{{"model", "m"}, {"think", true}, {"format", "json"}, {"thinking_budget_chars", -1}}, true, "thinking_budget_chars must be"},
        {{{"model", "m"}, {"messages", {{{"role", "assistant"}, {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", 3}}}}}}}}}},
         true, "messages[0].tool_calls[0].function.arguments must be a JSON object"},
        {{{"model", "m"}, {"logprobs", "yes"}}, false, "logprobs must be a boolean"},
        {{{"model", "m"}, {"logprobs", true}, {"top_logprobs", 21}}, false, "top_logprobs must be between 0 and 20"},
        {{{"model", "m"}, {"top_logprobs", -1}}, true, "top_logprobs must be between 0 and 20"},
        {{{"model", "m"}, {"top_logprobs", 1e30}}, false, "top_logprobs must be an integer"},
        {{{"model", "m"}, {"top_logprobs", 18446744073709551615ull}}, false, "top_logprobs must be between 0 and 20"},
        {{{"model", "m"}, {"template", "{{ .Prompt"}}, false, "invalid template: line 1"},
        {{{"model", "m"}, {"keep_alive", "5 minutes"}}, false, "keep_alive"},
        {{{"model", "m"}, {"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, true, "invalid role"},
        {{{"model", "m"}, {"messages", {json::object()}}}, true, "role is required"},
        {{{"model", "m"}, {"messages", "hello"}}, true, "messages must be an array"},
        {{{"model", "m"}, {"tools", {{{"type", "function"}}}}}, true, "tools[0].function must be an object"},
        {{{"model", "m"}, {"tools", {{{"type", "function"}, {"function", {{"description", "x"}}}}}}}, true, "tools[0].function.name is required"},
        {{{"model", "m"}, {"tools", "all"}}, true, "tools must be an array"},
    };
    for (const auto & c : cases) {
        const auto msg = bad_request_message([&] { c.chat ? decode_chat(c.body) : decode_generate(c.body); });
        EXPECT_NE(msg.find(c.needle), std::string::npos) << c.body.dump() << " -> " << msg;
    }
}

TEST(OllamaRequest, LogprobsBecomeTheAlternativesCount) {
    const auto lp = [](json extra) {
        json body = {{"model", "m"}, {"prompt", "x"}};
        body.update(extra);
        return decode_generate(body).request.generate.logprobs;
    };
    EXPECT_EQ(lp(json::object()), -1);
    EXPECT_EQ(lp({{"logprobs", false}, {"top_logprobs", 0}}), -1);
    EXPECT_EQ(lp({{"logprobs", true}}), 0);
    EXPECT_EQ(lp({{"logprobs", true}, {"top_logprobs", 20}}), 20);
    EXPECT_EQ(lp({{"top_logprobs", 3}}), 3); // alternatives asked for imply logprobs
    EXPECT_EQ(decode_chat(json{{"model", "m"}, {"messages", json::array()}, {"logprobs", true}, {"top_logprobs", 2}})
                  .request.generate.logprobs, 2);
}

TEST(OllamaRequest, FormatJsonAndSchemaBecomeGrammars) {
    auto d1 = decode_generate(json{{"model", "m"}, {"format", "json"}});
    EXPECT_NE(d1.request.generate.grammar.find("root"), std::string::npos);
    auto d2 = decode_generate(json{{"model", "m"},
                                   {"format", {{"type", "object"}, {"properties", {{"age", {{"type", "integer"}}}}},
                                               {"required", {"age"}}}}});
    EXPECT_NE(d2.request.generate.grammar.find("age"), std::string::npos);
}

TEST(OllamaRequest, OptionsOverrideModelParameters) {
    models::Parameters model;
    model.temperature = 0.5;
    model.num_ctx     = 1024;
    model.stop        = {"a"};
    GenerateRequest r;
    apply_options(model, json{{"temperature", 0}, {"stop", {"x", "y"}}, {"seed", 42}, {"num_gpu", 99}}, r);
    EXPECT_EQ(r.generate.sampling.temperature, 0.0f);
    EXPECT_EQ(r.context.num_ctx, 1024);
    EXPECT_EQ(r.generate.stop, (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(r.generate.sampling.seed, 42);
    EXPECT_EQ(r.context.num_gpu, 99);
    EXPECT_FALSE(r.context.main_gpu);
}

// Ollama's placement options shape the load: main_gpu and num_gpu (-1: as many as fit).
TEST(OllamaRequest, PlacementOptions) {
    GenerateRequest r;
    apply_options({}, json{{"main_gpu", 1}, {"num_gpu", -1}}, r);
    EXPECT_EQ(r.context.main_gpu, 1);
    EXPECT_FALSE(r.context.num_gpu);
    GenerateRequest other;
    apply_options({}, json{{"main_gpu", 0}}, other);
    EXPECT_FALSE(r.context == other.context); // another device: another load

    // The model's PARAMETER num_gpu / main_gpu apply unless the request says otherwise.
    models::Parameters model;
    model.num_gpu  = 4;
    model.main_gpu = 1;
    GenerateRequest from_model;
    apply_options(model, json::object(), from_model);
    EXPECT_EQ(from_model.context.num_gpu, 4);
    EXPECT_EQ(from_model.context.main_gpu, 1);
    GenerateRequest overridden;
    apply_options(model, json{{"num_gpu", -1}, {"main_gpu", 0}}, overridden);
    EXPECT_FALSE(overridden.context.num_gpu);
    EXPECT_EQ(overridden.context.main_gpu, 0);
}

TEST(OllamaRequest, RejectsBadOptions) {
    const std::vector<json> bad = {
        {{"num_ctx", 0}}, {{"num_ctx", -5}}, {{"num_ctx", (1 << 24) + 1}}, {{"num_predict", -3}},
        {{"num_predict", 1 << 30}}, {{"temperature", "hot"}}, {{"top_p", 2}}, {{"temperature", -1}},
        {{"mirostat", 3}}, {{"mirostat_tau", -1}}, {{"use_mmap", 1}}, {{"main_gpu", -1}}, {{"main_gpu", "0"}},
        {{"main_gpu", 1.5}}, {{"num_gpu", -2}},
    };
    for (const auto & o : bad) {
        GenerateRequest r;
        EXPECT_FALSE(bad_request_message([&] { apply_options({}, o, r); }).empty()) << o.dump();
    }
}

// Options the sampler would turn into inf or NaN logits (or an enormous buffer) are refused
// or brought into range at the edge, each refusal naming the option.
TEST(OllamaRequest, SamplingOptionsStayFinite) {
    struct Case { json options; std::string needle; };
    const std::vector<Case> refused = {
        {{{"temperature", 1e300}}, "temperature must be between 0 and 1000000"},
        {{{"temperature", 1e6 + 1}}, "temperature must be between 0 and 1000000"},
        {{{"repeat_penalty", 0}}, "repeat_penalty must be greater than 0"},
        {{{"repeat_penalty", 1e-40}}, "repeat_penalty must be at least 1e-06"},
        {{{"repeat_penalty", 1e300}}, "repeat_penalty must be between 0 and 1000000"},
        {{{"presence_penalty", 1e30}}, "presence_penalty must be between -1000000 and 1000000"},
        {{{"frequency_penalty", -1e30}}, "frequency_penalty must be between -1000000 and 1000000"},
        {{{"top_k", -1}}, "top_k"},
        {{{"repeat_last_n", -5}}, "repeat_last_n"},
        {{{"seed", 18446744073709551615ULL}}, "seed: must be a 64-bit integer"},
        {{{"seed", 1.5}}, "seed"},
    };
    for (const auto & c : refused) {
        GenerateRequest r;
        const auto msg = bad_request_message([&] { apply_options({}, c.options, r); });
        EXPECT_NE(msg.find(c.needle), std::string::npos) << c.options.dump() << " -> " << msg;
    }

    GenerateRequest r;
    apply_options({}, json{{"temperature", 1e-40}, {"repeat_penalty", 1e-6}, {"presence_penalty", -1e6},
                           {"repeat_last_n", 2147483647}, {"num_ctx", 256}, {"seed", -5}, {"top_k", 2147483647}},
                  r);
    EXPECT_EQ(r.generate.sampling.temperature, 0.0f); // below 1e-6: greedy
    EXPECT_GT(r.generate.sampling.repeat_penalty, 0.0f);
    EXPECT_EQ(r.generate.sampling.repeat_last_n, 256); // the window is at most the context
    EXPECT_EQ(r.generate.sampling.seed, -5);
    EXPECT_EQ(r.generate.sampling.top_k, 2147483647);

    GenerateRequest whole;
    apply_options({}, json{{"repeat_last_n", -1}, {"num_ctx", 512}}, whole);
    EXPECT_EQ(whole.generate.sampling.repeat_last_n, 512);
}

// JSON numbers beyond double range: nlohmann throws out_of_range (not parse_error) for 1e999,
// which must be a 400 like any other invalid JSON, not a 500.
TEST(JsonInput, OverflowingNumbersAreInvalidJson) {
    for (const char * body : {R"({"model":"m","options":{"temperature":1e999}})", R"({"keep_alive":-1e999})",
                              R"({"context":[1e400]})"}) {
        const auto msg = bad_request_message([&] { parse_body(body); });
        EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << body << " -> " << msg;
        EXPECT_NE(msg.find("overflow"), std::string::npos) << body << " -> " << msg;
    }
}

TEST(OllamaRequest, KeepAliveForms) {
    using namespace std::chrono;
    EXPECT_EQ(*parse_keep_alive(json("5m")), minutes(5));
    EXPECT_EQ(*parse_keep_alive(json("1h30m")), minutes(90));
    EXPECT_EQ(*parse_keep_alive(json("0")), nanoseconds(0));
    EXPECT_EQ(*parse_keep_alive(json(0)), nanoseconds(0));
    EXPECT_EQ(*parse_keep_alive(json(10)), seconds(10));
    EXPECT_LT(parse_keep_alive(json("-1"))->count(), 0);
    EXPECT_LT(parse_keep_alive(json(-1))->count(), 0);
    EXPECT_FALSE(parse_keep_alive(json(nullptr)).has_value());
}

// Found while writing fuzz/request.cpp (and reproduced through it, as decode_generate here):
// a digit string past a double's range, or a fraction below it, made std::stod throw
// std::out_of_range (a 500); a long duration overflowed the stack inside std::regex (the
// server process died). Each is now a 400 before either runs.
TEST(OllamaRequest, HostileKeepAliveIsABadRequest) {
    const std::string cases[] = {
        "1" + std::string(400, '0'),
        "0." + std::string(400, '0') + "1s",
        [] { std::string s; for (int i = 0; i < 20000; ++i) s += "1s"; return s; }(),
    };
    for (const auto & ka : cases) {
        const auto msg = bad_request_message([&] { decode_generate(parse_body(json{{"model", "m"}, {"keep_alive", ka}}.dump())); });
        EXPECT_NE(msg.find("keep_alive"), std::string::npos) << ka.substr(0, 40) << " -> " << msg;
    }
    const std::string longest = std::string(k_max_keep_alive_chars - 1, '0') + "1";
    EXPECT_EQ(parse_keep_alive(json(longest))->count(), 1'000'000'000);
}

TEST(JsonInput, RejectsHostileBodies) {
    EXPECT_FALSE(bad_request_message([] { parse_body("{\"a\": "); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body("[1,2]"); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body(std::string(100000, '[')); }).empty());
    EXPECT_FALSE(bad_request_message([] { parse_body("{\"model\": \"\xff\xfe\"}"); }).empty());
    EXPECT_EQ(parse_body("{\"a\": \"[[[[\"}")["a"], "[[[[");
}

// As Ollama: an option the server does not know is ignored, and said so (no silent downgrade);
// a known one with a bad value is still a 400.
TEST(OllamaRequest, UnknownOptionsAreIgnoredWithAWarning) {
    GenerateRequest          r;
    std::vector<std::string> warnings;
    prepare::apply_options({}, json{{"num_gqa", 8}, {"temperature", 0.5}, {"tfs_z", 0.9}, {"penalize_newline", true},
                                {"top_k", nullptr}, {"weird\nkey", 1}},
                       r, warnings);
    EXPECT_EQ(r.generate.sampling.temperature, 0.5f);
    EXPECT_EQ(r.generate.sampling.top_k, 40); // null: unset, the default stays
    std::sort(warnings.begin(), warnings.end());
    ASSERT_EQ(warnings.size(), 4u);
    EXPECT_EQ(warnings[0], "option \"num_gqa\" is not a known option: ignored");
    EXPECT_EQ(warnings[1], "option \"weird\\nkey\" is not a known option: ignored"); // quoted: it goes to the log
    EXPECT_NE(warnings[2].find("penalize_newline is not supported"), std::string::npos);
    EXPECT_NE(warnings[3].find("tfs_z is not supported"), std::string::npos);

    // The values that change nothing need no warning.
    std::vector<std::string> none;
    prepare::apply_options({}, json{{"tfs_z", 1}, {"penalize_newline", false}, {"mirostat", 0}}, r, none);
    EXPECT_TRUE(none.empty());
}

TEST(OllamaRequest, MirostatOptionsReachTheSampler) {
    models::Parameters model;
    model.mirostat_tau = 3.0; // a Modelfile's PARAMETER
    GenerateRequest r;
    apply_options(model, json{{"mirostat", 2}, {"mirostat_eta", 0.2}}, r);
    EXPECT_EQ(r.generate.sampling.mirostat, 2);
    EXPECT_FLOAT_EQ(r.generate.sampling.mirostat_tau, 3.0f);
    EXPECT_FLOAT_EQ(r.generate.sampling.mirostat_eta, 0.2f);
    GenerateRequest plain;
    apply_options({}, json::object(), plain);
    EXPECT_EQ(plain.generate.sampling.mirostat, 0);
    EXPECT_FLOAT_EQ(plain.generate.sampling.mirostat_tau, 5.0f); // Ollama's defaults
    EXPECT_FLOAT_EQ(plain.generate.sampling.mirostat_eta, 0.1f);
}

TEST(OllamaRequest, ChatToolMessagesKeepTheirCallIds) {
    const auto d = decode_chat(json{{"model", "m"},
                                    {"messages",
                                     {{{"role", "assistant"},
                                       {"tool_calls", {{{"id", "call_1"}, {"function", {{"name", "f"}, {"arguments", json::object()}}}}}}},
                                      {{"role", "tool"}, {"tool_name", "f"}, {"tool_call_id", "call_1"}, {"content", "42"}}}}});
    const auto & m = d.request.prompt.messages;
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].tool_calls.at(0).id, "call_1");
    EXPECT_EQ(m[1].tool_call_id, "call_1");
    EXPECT_EQ(m[1].tool_name, "f");
}
