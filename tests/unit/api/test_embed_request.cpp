// Embedding request bodies: what each field becomes, every refusal (table-driven), and the
// shaping of vectors (dimensions, normalization) per endpoint.
#include "api/embed_request.h"

#include "api/openai_request.h"
#include "core/error.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace specd;
using namespace specd::api;

namespace {

json body(const char * text) { return json::parse(text); }

double l2(const std::vector<float> & v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s);
}

} // namespace

TEST(EmbedRequest, StringAndArrayInputs) {
    auto one = decode_embed(body(R"({"model":"m","input":"hi"})"));
    ASSERT_TRUE(one.request.embed);
    EXPECT_EQ(one.request.embed->inputs, std::vector<std::string>{"hi"});
    EXPECT_TRUE(one.request.embed->truncate);
    EXPECT_FALSE(one.request.load_only);

    auto many = decode_embed(body(R"({"model":"m","input":["a","","b"],"truncate":false,"dimensions":3,"keep_alive":0})"));
    EXPECT_EQ(many.request.embed->inputs, (std::vector<std::string>{"a", "", "b"}));
    EXPECT_FALSE(many.request.embed->truncate);
    EXPECT_EQ(many.dimensions, 3);
    ASSERT_TRUE(many.request.keep_alive);
    EXPECT_EQ(many.request.keep_alive->count(), 0);
}

TEST(EmbedRequest, EmptyInputOnlyLoads) {
    for (const char * text : {R"({"model":"m"})", R"({"model":"m","input":""})", R"({"model":"m","input":[]})"}) {
        auto r = decode_embed(body(text));
        EXPECT_TRUE(r.request.load_only) << text;
        EXPECT_TRUE(r.request.embed->inputs.empty()) << text;
    }
    EXPECT_TRUE(decode_embeddings_legacy(body(R"({"model":"m","prompt":""})")).request.load_only);
}

TEST(EmbedRequest, Refusals) {
    json too_many = {{"model", "m"}, {"input", json::array()}};
    for (size_t i = 0; i <= k_max_embed_inputs; ++i) too_many["input"].push_back("x");
    const std::vector<std::pair<json, std::string>> cases = {
        {body(R"({"input":"x"})"), "model is required"},
        {body(R"({"model":"m","input":5})"), "input must be a string or an array"},
        {body(R"({"model":"m","input":["a",2]})"), "input[1] must be a string"},
        {body(R"({"model":"m","input":"x","dimensions":0})"), "dimensions must be"},
        {body(R"({"model":"m","input":"x","dimensions":"8"})"), "dimensions must be"},
        {body(R"({"model":"m","input":"x","truncate":"no"})"), "truncate"},
        {body(R"({"model":"m","input":"x","options":[]})"), "options must be an object"},
        {body(R"({"model":"m","input":"x","keep_alive":"soon"})"), "keep_alive"},
        {too_many, "at most 256 inputs"},
    };
    for (const auto & [b, message] : cases) {
        try {
            decode_embed(b);
            ADD_FAILURE() << "accepted " << b.dump();
        } catch (const Error & e) {
            EXPECT_EQ(e.kind(), ErrorKind::bad_request);
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    }
}

TEST(EmbedRequest, OpenAIRefusalsNameTheirParam) {
    const std::vector<std::pair<const char *, std::string>> cases = {
        {R"({"input":"x"})", "model"},
        {R"({"model":"m"})", "input"},
        {R"({"model":"m","input":[[1,2]]})", "input"},
        {R"({"model":"m","input":[1,2]})", "input"},
        {R"({"model":"m","input":"x","encoding_format":"int8"})", "encoding_format"},
        {R"({"model":"m","input":"x","dimensions":-1})", "dimensions"},
    };
    for (const auto & [text, param] : cases) {
        try {
            decode_openai_embed(body(text));
            ADD_FAILURE() << "accepted " << text;
        } catch (const ParamError & e) {
            EXPECT_EQ(e.param(), param) << text;
        }
    }
    auto r = decode_openai_embed(body(R"({"model":"m","input":["a","b"],"encoding_format":"base64"})"));
    EXPECT_TRUE(r.base64);
    EXPECT_EQ(r.request.embed->inputs.size(), 2u);
}

TEST(EmbedRequest, ShapeKeepsTheFirstDimensionsAndNormalizes) {
    const std::vector<float> v = {3, 4, 12};
    const auto full = shape_embedding(v, std::nullopt, true);
    EXPECT_NEAR(l2(full), 1.0, 1e-6);
    EXPECT_NEAR(full[0], 3.0 / 13, 1e-6);
    const auto two = shape_embedding(v, 2, true);
    ASSERT_EQ(two.size(), 2u);
    EXPECT_NEAR(two[0], 0.6, 1e-6);
    EXPECT_NEAR(two[1], 0.8, 1e-6);
    EXPECT_EQ(shape_embedding(v, std::nullopt, false), v);
    EXPECT_THROW(shape_embedding(v, 4, true), Error);
    EXPECT_EQ(shape_embedding({0, 0}, std::nullopt, true), (std::vector<float>{0, 0}));
}

TEST(EmbedRequest, AnswerShapes) {
    scheduler::DoneInfo done;
    done.embeddings              = {{3, 4}, {0, 2}};
    done.result.stats.prompt_eval_count = 7;
    done.total_ns                = 100;

    auto ollama = decode_embed(body(R"({"model":"m","input":["a","b"]})"));
    json a      = embed_answer_json(ollama, done);
    EXPECT_EQ(a["model"], "m");
    EXPECT_NEAR(a["embeddings"][0][0].get<double>(), 0.6, 1e-6);
    EXPECT_EQ(a["prompt_eval_count"], 7);
    EXPECT_EQ(a["total_duration"], 100);

    auto legacy = decode_embeddings_legacy(body(R"({"model":"m","prompt":"a"})"));
    json l      = embed_answer_json(legacy, done);
    EXPECT_EQ(l["embedding"][1].get<double>(), 4.0); // not normalized, as Ollama's legacy endpoint

    auto openai = decode_openai_embed(body(R"({"model":"m","input":["a","b"]})"));
    json o      = embed_answer_json(openai, done);
    EXPECT_EQ(o["object"], "list");
    EXPECT_EQ(o["data"][1]["index"], 1);
    EXPECT_EQ(o["data"][1]["object"], "embedding");
    EXPECT_EQ(o["usage"]["prompt_tokens"], 7);
    EXPECT_EQ(o["usage"]["total_tokens"], 7);
}
