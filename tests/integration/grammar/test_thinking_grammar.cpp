// think + format: the composed grammar (reasoning block, end tag, separator, then the
// format's JSON) checked with llama.cpp's own grammar sampler, table-driven.
#include "core/error.h"
#include "grammar/json_schema.h"
#include "grammar/thinking_grammar.h"
#include "grammar_table.h"

#include <gtest/gtest.h>

using namespace specd;
using grammar_test::probe;

namespace {

// The composed texts are reasoning plus JSON, not JSON.
void check(const std::string & name, const std::string & gbnf, const std::vector<std::string> & pass,
           const std::vector<std::string> & fail) {
    grammar_test::check_gbnf(name, gbnf, pass, fail, /*pass_must_be_json=*/false);
}

grammar::ThinkingBlock qwen(std::optional<int64_t> budget) {
    grammar::ThinkingBlock b;
    b.open         = "<think>";
    b.close        = "</think>";
    b.budget_chars = budget;
    return b;
}

} // namespace

TEST(ThinkingGrammar, BudgetedBlockThenBareJsonObject) {
    ASSERT_TRUE(probe().complete());
    check("json, budget 5", grammar::thinking_then(grammar::json_object_grammar(), qwen(5)),
          {"<think></think>\n\n{}", "<think>hmm\n</think>\n\n{\"a\": 1}", "<think>12345</think>\n\n{\"a\":[true]}"},
          {
              "<think>123456</think>\n\n{}",          // over the budget
              "<think>a<b</think>\n\n{}",             // '<' in the reasoning: it could hold its own end tag
              "<think></think>\n\n```json\n{}\n```", // a fenced answer
              "<think></think>{}",                    // the separator is the template's
              "{}",                                   // no block
              "<think></think>\n\n{} ",               // nothing after the JSON
              "<think></think>\n\n",                  // no answer
          });
}

TEST(ThinkingGrammar, UnboundedBlockAndSchemaRootRenamed) {
    // A recursive schema refers to its root ("#"): the reference must follow the rename.
    const std::string schema = R"({"type":"object","properties":{"next":{"$ref":"#"},"n":{"type":"integer"}},"required":["n"],"additionalProperties":false})";
    const std::string gbnf   = grammar::thinking_then(grammar::schema_to_grammar(schema), qwen(std::nullopt));
    check("recursive schema, no budget", gbnf,
          {"<think>" + std::string(300, 'x') + "</think>\n\n{\"n\":1}", "<think>a</think>\n\n{\"next\":{\"n\":2},\"n\":1}"},
          {"<think>a</think>\n\n{\"next\":{\"n\":2}}", "<think>a</think>\n\n{\"n\":\"1\"}"});
}

TEST(ThinkingGrammar, OpenTagAlreadyInThePrompt) {
    grammar::ThinkingBlock b = qwen(8);
    b.open.clear();
    check("no open tag", grammar::thinking_then(grammar::json_object_grammar(), b), {"abc</think>\n\n{}"},
          {"<think>abc</think>\n\n{}"});
}

TEST(ThinkingGrammar, NoEndTagIsABadRequest) {
    grammar::ThinkingBlock b = qwen(8);
    b.close.clear();
    try {
        grammar::thinking_then(grammar::json_object_grammar(), b);
        FAIL() << "expected a bad_request";
    } catch (const Error & e) {
        EXPECT_EQ(e.kind(), ErrorKind::bad_request);
    }
}
