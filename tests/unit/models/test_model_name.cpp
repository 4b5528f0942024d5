#include "models/model_name.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

using namespace specd::models;

namespace {

std::string reason(std::string_view text) {
    auto parsed = parse_model_name(text);
    auto * err  = std::get_if<std::string>(&parsed);
    return err ? *err : std::string();
}

} // namespace

TEST(ModelName, ValidNamesGetDefaults) {
    struct Case {
        const char * text;
        const char * host;
        const char * ns;
        const char * model;
        const char * tag;
        const char * display;
    };
    const Case cases[] = {
        {"tiny", "registry.ollama.ai", "library", "tiny", "latest", "tiny:latest"},
        {"tiny:latest", "registry.ollama.ai", "library", "tiny", "latest", "tiny:latest"},
        {"qwen3:0.6b", "registry.ollama.ai", "library", "qwen3", "0.6b", "qwen3:0.6b"},
        {"me/tiny", "registry.ollama.ai", "me", "tiny", "latest", "me/tiny:latest"},
        {"me/tiny:v1.2-q4_K_M", "registry.ollama.ai", "me", "tiny", "v1.2-q4_K_M", "me/tiny:v1.2-q4_K_M"},
        {"library/tiny:x", "registry.ollama.ai", "library", "tiny", "x", "tiny:x"},
        {"registry.ollama.ai/library/tiny", "registry.ollama.ai", "library", "tiny", "latest", "tiny:latest"},
        {"example.com/me/tiny:v1", "example.com", "me", "tiny", "v1", "example.com/me/tiny:v1"},
        {"localhost:5000/me/tiny:v1", "localhost:5000", "me", "tiny", "v1", "localhost:5000/me/tiny:v1"},
        {"localhost:5000/me/tiny", "localhost:5000", "me", "tiny", "latest", "localhost:5000/me/tiny:latest"},
        {"hf.co/Org/Model-GGUF:Q4_K_M", "hf.co", "Org", "Model-GGUF", "Q4_K_M", "hf.co/Org/Model-GGUF:Q4_K_M"},
        {"_under/_score:_t", "registry.ollama.ai", "_under", "_score", "_t", "_under/_score:_t"},
        {"a.b-c_d", "registry.ollama.ai", "library", "a.b-c_d", "latest", "a.b-c_d:latest"},
    };
    for (const auto & c : cases) {
        auto name = parse(c.text);
        ASSERT_TRUE(name.has_value()) << c.text << ": " << reason(c.text);
        EXPECT_EQ(name->host, c.host) << c.text;
        EXPECT_EQ(name->ns, c.ns) << c.text;
        EXPECT_EQ(name->model, c.model) << c.text;
        EXPECT_EQ(name->tag, c.tag) << c.text;
        EXPECT_EQ(name->display(), c.display) << c.text;
        // The display form parses back to the same name.
        EXPECT_EQ(parse(name->display()), name) << c.text;
    }
}

TEST(ModelName, InvalidNamesSayWhy) {
    struct Case {
        std::string text;
        const char * reason_part;
    };
    const Case cases[] = {
        {"", "empty"},
        {"..", "'..'"},
        {"../x", "'..'"},
        {"a/../../b", "too many parts"},
        {"a/../b", "'..'"},
        {"x/..", "'..'"},
        {"tiny:..", "'..'"},
        {"/etc/passwd", "absolute path"},
        {"/tiny", "absolute path"},
        {"..\\..\\windows", "backslash"},
        {"me\\tiny", "backslash"},
        {"a/b/c/d", "too many parts"},
        {"a//b", "empty namespace"},
        {"me/", "empty model"},
        {"tiny:", "empty tag"},
        {":latest", "empty model"},
        {".hidden", "must start with"},
        {"-rf", "must start with"},
        {"me/.tiny", "must start with"},
        {"tiny:-x", "must start with"},
        {".x/me/tiny", "must start with"},
        {"tiny:a:b", "invalid character"},
        {"ti ny", "invalid character"},
        {"tiny@sha256:abc", "invalid character"},
        {"me/ti*ny", "invalid character"},
        {"ns:1/tiny", "invalid character"},
        {"host:port/me/tiny", "port must be"},
        {"host:123456/me/tiny", "port must be"},
        {"host:/me/tiny", "port must be"},
        {"https://example.com/me/tiny", "scheme"},
        {"caf\xc3\xa9", "ASCII"},
        {"\xe6\xa8\xa1\xe5\x9e\x8b:latest", "ASCII"},
        {"tiny\n", "control character"},
        {std::string("ti\0ny", 5), "control character"},
        {std::string(81, 'm'), "model is too long"},
        {"tiny:" + std::string(81, 't'), "tag is too long"},
        {std::string(81, 'n') + "/tiny", "namespace is too long"},
        {std::string(351, 'a'), "model name is too long"},
    };
    for (const auto & c : cases) {
        EXPECT_FALSE(parse(c.text).has_value()) << c.text;
        EXPECT_NE(reason(c.text).find(c.reason_part), std::string::npos)
            << "'" << c.text << "' gave: " << reason(c.text);
    }
}

TEST(ModelName, LengthLimitsAreInclusive) {
    EXPECT_TRUE(parse(std::string(80, 'm')).has_value());
    EXPECT_TRUE(parse("m:" + std::string(80, 't')).has_value());
    // A long host is fine up to the whole-name limit.
    const std::string host(350 - std::string("/n/m:t").size(), 'h');
    EXPECT_TRUE(parse(host + "/n/m:t").has_value()) << reason(host + "/n/m:t");
    EXPECT_FALSE(parse(host + "x/n/m:t").has_value());
}

// Found by fuzz/model_name: a 345-character name with no tag was accepted, but its display
// form (":latest" added, 352 characters) was then too long to parse again.
TEST(ModelName, DisplayFormParsesAgain) {
    const std::string host(299, 'h');
    const std::string typed = host + "/" + std::string(39, 'n') + "/mmmmm";
    ASSERT_EQ(typed.size(), 345u);
    EXPECT_FALSE(parse(typed).has_value());
    EXPECT_NE(reason(typed).find("too long with its tag"), std::string::npos) << reason(typed);
    const std::string tagged = host + "/" + std::string(39, 'n') + "/m:t"; // 345 with its tag
    auto name = parse(tagged);
    ASSERT_TRUE(name);
    EXPECT_TRUE(parse(name->display()).has_value());
    EXPECT_TRUE(parse(name->full()).has_value());
}

TEST(ModelName, CaseInsensitiveCompareAndLowercasePath) {
    auto a = parse("Me/Tiny:V1");
    auto b = parse("me/tiny:v1");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(a->display(), "Me/Tiny:V1"); // what the user typed
    EXPECT_EQ(a->manifest_relpath(), "registry.ollama.ai/me/tiny/v1");
    EXPECT_EQ(a->manifest_relpath(), b->manifest_relpath());
    EXPECT_FALSE(*parse("me/tiny:v1") == *parse("me/tiny:v2"));
    EXPECT_EQ(parse("REGISTRY.OLLAMA.AI/LIBRARY/tiny")->display(), "tiny:latest");
}

TEST(ModelName, FullAndRelpath) {
    auto name = parse("localhost:5000/me/tiny:v1");
    ASSERT_TRUE(name);
    EXPECT_EQ(name->full(), "localhost:5000/me/tiny:v1");
    EXPECT_EQ(name->manifest_relpath(), "localhost:5000/me/tiny/v1");
    EXPECT_EQ(parse("tiny")->full(), "registry.ollama.ai/library/tiny:latest");
}

TEST(ModelName, ParseOrThrowIsABadRequest) {
    EXPECT_EQ(parse_or_throw("tiny").model, "tiny");
    try {
        parse_or_throw("../x");
        FAIL() << "expected an error";
    } catch (const specd::Error & e) {
        EXPECT_EQ(e.kind(), specd::ErrorKind::bad_request);
        EXPECT_NE(std::string(e.what()).find("invalid model name"), std::string::npos);
    }
}
