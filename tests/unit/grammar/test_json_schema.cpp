// The schema compiler's edges without a model: what it rejects (each with a message naming
// the keyword or limit and where), what it accepts, and that llama.cpp's parser takes its
// output. Text acceptance by the real grammar is in tests/integration/grammar/.
#include "grammar/json_schema.h"

#include "core/error.h"
#include "engine/llama_handles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace specd::grammar;

namespace {

// The bad_request message for `schema`, or "" when it compiled.
std::string error_of(const std::string & schema, const SchemaLimits & limits = {}) {
    try {
        schema_to_grammar(schema, limits);
    } catch (const specd::Error & e) {
        EXPECT_EQ(e.kind(), specd::ErrorKind::bad_request) << e.what();
        return e.what();
    }
    return "";
}

// Each schema must fail with a message holding every listed fragment.
struct Rejection {
    std::string              schema;
    std::vector<std::string> says;
};

void expect_rejected(const std::vector<Rejection> & table, const SchemaLimits & limits = {}) {
    for (const auto & r : table) {
        const auto msg = error_of(r.schema, limits);
        EXPECT_FALSE(msg.empty()) << "accepted: " << r.schema;
        EXPECT_EQ(msg.rfind("invalid format: ", 0), 0u) << msg;
        for (const auto & s : r.says) EXPECT_NE(msg.find(s), std::string::npos) << "\"" << s << "\" not in: " << msg;
    }
}

// llama.cpp's parser (no vocabulary needed for plain GBNF) takes the grammar.
bool llama_parses(const std::string & gbnf) {
    specd::engine::sampler_ptr s(llama_sampler_init_grammar(nullptr, gbnf.c_str(), "root"));
    return s != nullptr;
}

std::string nest(int depth) {
    std::string s = R"({"type":"integer"})";
    for (int i = 0; i < depth; ++i) s = R"({"type":"array","items":)" + s + "}";
    return s;
}

} // namespace

TEST(JsonSchema, CompleteJsonDetection) {
    EXPECT_TRUE(is_complete_json("{}"));
    EXPECT_TRUE(is_complete_json(" {\"a\": [1, 2]}\n"));
    EXPECT_TRUE(is_complete_json("[1]"));
    EXPECT_FALSE(is_complete_json("{\"a\": [1, 2]"));
    EXPECT_FALSE(is_complete_json("{\"a\": \"}\""));
    EXPECT_FALSE(is_complete_json(""));
    EXPECT_FALSE(is_complete_json("{} {}"));
}

TEST(JsonSchema, SchemasBecomeGrammarsLlamaCppParses) {
    for (const char * schema : {
             R"({"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]})",
             R"({"type":"object","properties":{"a":{"type":"string","pattern":"^(x|y){2,40}[^\\d]*$"}},"additionalProperties":{"type":"number","minimum":-5,"exclusiveMaximum":5}})",
             R"({"type":"array","items":{"type":"string","maxLength":5000},"minItems":100,"maxItems":9999})",
             R"({"$defs":{"t":{"type":"object","properties":{"k":{"type":"array","items":{"$ref":"#/$defs/t"}}}}},"$ref":"#/$defs/t"})",
             R"({"type":["string","integer","null","boolean","object","array","number"]})",
             R"({"enum":["a","ab","abc",1,12,123,null,{"x":[true]}]})",
             R"(true)",
             R"({})",
         }) {
        const auto g = schema_to_grammar(schema);
        EXPECT_EQ(g.rfind("root ::= ", 0), 0u) << g;
        EXPECT_TRUE(llama_parses(g)) << schema << "\n" << g;
    }
    EXPECT_TRUE(llama_parses(json_object_grammar()));
}

// Odd characters and constructs in patterns still give GBNF llama.cpp parses.
TEST(JsonSchema, PatternsBecomeGrammarsLlamaCppParses) {
    for (const char * p : {"^[\\]\\-^\"\\\\]+$", "^[α-ω]{2}\\u{1F600}?$", "^[^\\x00-\\x7F]*$", "[\\s\\S]", "\\W\\D\\S",
                           "^(a*b)*$", "^(?<year>\\d{4})-(?:0[1-9]|1[0-2])$", "^.{0,3000}$", "^(x{0,40}y){1,50}$", "[\\b\\cA\\0]",
                           "^\\$\\^\\.\\|\\?\\*\\+\\(\\)\\[\\]\\{\\}\\/$", "a{,3}", "^}]$", "^(|a|)$", "", "^$", "^", "$"}) {
        const auto schema = R"({"type":"string","pattern":)" + nlohmann::json(p).dump() + "}";
        std::string g;
        try {
            g = schema_to_grammar(schema);
        } catch (const std::exception & e) {
            ADD_FAILURE() << p << ": " << e.what();
            continue;
        }
        EXPECT_TRUE(llama_parses(g)) << p << "\n" << g;
    }
}

TEST(JsonSchema, BrokenSchemaIsABadRequest) {
    expect_rejected({
        {R"({"type":"object","properties":{"a":{"$ref":"#/definitions/missing"}}})",
         {"unresolved $ref \"#/definitions/missing\"", "at /properties/a"}},
        {"not json", {"expected \"json\" or a valid JSON Schema object"}},
        {"[1,2]", {"must be an object or a boolean"}},
        {"false", {"false", "no value can match"}},
    });
}

TEST(JsonSchema, UnsupportedKeywordsAreNamedWithTheirPlace) {
    std::vector<Rejection> table;
    for (const char * k : {"not", "if", "then", "else", "contains",
                           "patternProperties", "propertyNames", "dependentRequired", "dependentSchemas",
                           "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains", "nullable", "$anchor"}) {
        table.push_back({std::string(R"({"type":"object","properties":{"n":{")") + k + R"(":1}}})",
                         {"unsupported JSON schema feature \"" + std::string(k) + "\" at /properties/n"}});
    }
    table.push_back({R"({"items":{"uniqueItems":true}})", {"\"uniqueItems\" at /items"}});
    // Where they cannot be written (strict: refused; lenient: UnenforceableKeywords... below).
    table.push_back({R"({"type":"integer","multipleOf":3})", {"unsupported JSON schema feature \"multipleOf\" at /"}});
    table.push_back({R"({"type":"integer","minimum":0,"multipleOf":3})", {"\"multipleOf\" at /", "bounded range"}});
    table.push_back({R"({"type":"number","multipleOf":0.25})", {"\"multipleOf\" at /", "power of ten"}});
    table.push_back({R"({"type":"object","properties":{"a":{},"b":{}},"minProperties":2})", {"\"minProperties\" at /"}});
    table.push_back({R"({"type":"object","maxProperties":2})", {"\"maxProperties\" at /"}});
    table.push_back({R"({"allOf":[{"type":"string"},{"minLength":1}]})", {"\"allOf\" with 2 schemas at /"}});
    table.push_back({R"({"anyOf":[{"type":"string"}],"oneOf":[{"type":"string"}]})", {"\"anyOf\" together with \"oneOf\""}});
    table.push_back({R"({"$ref":"https://example.com/s.json"})", {"unsupported $ref", "only refs within the schema"}});
    table.push_back({R"({"$ref":"#foo"})", {"unsupported $ref \"#foo\""}});
    table.push_back({R"({"$ref":"#/$defs/a","type":"string","$defs":{"a":{}}})", {"\"type\" beside \"$ref\""}});
    table.push_back({R"({"type":"string","format":"idn-email"})", {"\"format\" at /", "\"idn-email\" is unknown here", "date, time, date-time, uuid"}});
    table.push_back({R"({"type":"number","minimum":0.5})", {"non-integral bound \"minimum\" 0.5", "at /"}});
    table.push_back({R"({"type":"string","pattern":"^\\w+$","maxLength":5})", {"\"maxLength\" at /", "unless it implies the length"}});
    table.push_back({R"({"type":"string","pattern":"^[a-z]{3}$","minLength":4})", {"\"minLength\" at /", "beside a pattern"}});
    table.push_back({R"({"type":"string","format":"date","maxLength":20})", {"\"maxLength\" at /", "beside a format"}});
    table.push_back({R"({"type":"string","format":"date","pattern":"^2"})", {"\"format\" at /", "the pattern beside it"}});
    table.push_back({R"({"enum":["a","bb"],"minLength":2})", {"\"minLength\" beside \"enum\""}});
    table.push_back({R"({"properties":{"p":{"pattern":"(?=a)b"}}})", {"\"pattern\" at /properties/p", "lookahead"}});
    table.push_back({R"({"pattern":"(a)\\1"})", {"backreferences"}});
    table.push_back({R"({"pattern":"\\bword"})", {"word boundaries"}});
    table.push_back({R"({"pattern":"a^b"})", {"anchors"}});
    table.push_back({R"({"pattern":"\\p{L}"})", {"Unicode property"}});
    table.push_back({R"({"pattern":"(ab"})", {"unbalanced parenthesis"}});
    table.push_back({R"x({"pattern":"ab)"})x", {"unbalanced parenthesis"}});
    table.push_back({R"({"pattern":"[a-"})", {"unterminated character class"}});
    table.push_back({R"({"pattern":"a**"})", {"nothing to repeat"}});
    table.push_back({R"({"pattern":"x{3,2}"})", {"out of order"}});
    table.push_back({R"({"pattern":"\\q"})", {"unknown escape \\q"}});
    table.push_back({R"({"pattern":"^(a*)*$"})", {"can match nothing"}});
    table.push_back({R"({"pattern":"^(a|b?)+c$"})", {"can match nothing"}});
    expect_rejected(table);
}

TEST(JsonSchema, MalformedKeywordsAreNamed) {
    expect_rejected({
        {R"({"type":"integer","minimum":"3"})", {"\"minimum\" at / must be a number"}},
        {R"({"type":"integer","exclusiveMinimum":true})", {"\"exclusiveMinimum\" at / must be a number"}},
        {R"({"type":"object","required":"a"})", {"\"required\" at / must be an array of strings"}},
        {R"({"type":"object","required":[1]})", {"\"required\" at / must be an array of strings"}},
        {R"({"properties":{"a":{"type":"array","minItems":-1}}})", {"\"minItems\" at /properties/a must be a non-negative integer"}},
        {R"({"type":"array","maxItems":1.5})", {"\"maxItems\" at / must be a non-negative integer"}},
        {R"({"type":"array","minItems":7,"maxItems":6})", {"\"minItems\" (7) is greater than \"maxItems\" (6) at /"}},
        {R"({"type":"string","minLength":3,"maxLength":2})", {"\"minLength\" (3) is greater than \"maxLength\" (2)"}},
        {R"({"type":"strng"})", {"\"type\" at / must be one of"}},
        {R"({"type":[]})", {"\"type\" at / must be"}},
        {R"({"properties":[]})", {"\"properties\" at / must be an object"}},
        {R"({"enum":[]})", {"\"enum\" at / must be a non-empty array"}},
        {R"({"enum":"a"})", {"\"enum\" at / must be a non-empty array"}},
        {R"({"anyOf":[]})", {"\"anyOf\" at / must be a non-empty array"}},
        {R"({"type":"integer","minimum":5,"maximum":4})", {"no integer satisfies the bounds at /"}},
        {R"({"type":"integer","minimum":4.2,"maximum":4.8})", {"no integer satisfies the bounds"}},
        {R"({"type":"number","exclusiveMinimum":3,"maximum":3})", {"no number satisfies the bounds"}},
        {R"({"type":"integer","minimum":1e300})", {"\"minimum\"", "out of the supported range"}},
        {R"({"type":"string","enum":[1,2]})", {"no value of \"enum\"/\"const\" at /"}},
        {R"({"const":1,"enum":[2,3]})", {"no value of \"enum\"/\"const\""}},
        {R"({"type":"object","properties":{"a":false},"required":["a"]})", {"required property \"a\" at / has the schema false"}},
        {R"({"type":"object","properties":{"a":{}},"required":["b"]})", {"required property \"b\"", "not in \"properties\""}},
        {R"({"type":"array","prefixItems":[{}],"minItems":2})", {"\"minItems\" (2) at / needs more items"}},
        {R"({"anyOf":[false]})", {"no branch of \"anyOf\" at / can match"}},
        {R"({"type":"string","anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{}}})", {"with a $ref branch"}},
        {R"({"type":"string","anyOf":[{"type":"integer"}]})", {"keyword \"type\" both beside \"anyOf\""}},
    });
}

TEST(JsonSchema, RefCyclesWithoutProgressAreRejected) {
    expect_rejected({
        {R"({"$ref":"#"})", {"$ref cycle that writes nothing", "#"}},
        {R"({"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"$ref":"#/$defs/A"})",
         {"$ref cycle that writes nothing", "#/$defs/A -> #/$defs/B -> #/$defs/A"}},
        {R"({"$defs":{"A":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/A"}]}},"type":"object","properties":{"x":{"$ref":"#/$defs/A"}}})",
         {"$ref cycle that writes nothing", "at /properties/x"}},
        // The no-progress edge found only after the ref was reached through an object.
        {R"({"$defs":{"A":{"anyOf":[{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},{"$ref":"#/$defs/B"}]},)"
         R"("B":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"null"}]}},"$ref":"#/$defs/A"})",
         {"$ref cycle that writes nothing"}},
    });
    // Recursion through a value that writes something first is fine.
    EXPECT_EQ(error_of(R"({"type":"object","properties":{"self":{"$ref":"#"}}})"), "");
    EXPECT_EQ(error_of(R"({"$defs":{"L":{"type":"array","items":{"$ref":"#/$defs/L"}}},"$ref":"#/$defs/L"})"), "");
}

TEST(JsonSchema, AnnotationsAreIgnored) {
    const auto plain = schema_to_grammar(R"({"type":"object","properties":{"a":{"type":"integer"}}})");
    const auto annotated = schema_to_grammar(
        R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"T","description":"d","$comment":"c",)"
        R"("type":"object","properties":{"a":{"type":"integer","default":1,"examples":[1],"deprecated":false,"readOnly":true,)"
        R"("writeOnly":false,"title":"A"}},"$defs":{"unused":{"multipleOf":3}},"definitions":{}})");
    EXPECT_EQ(plain, annotated);
}

TEST(JsonSchema, EachLimitIsEnforcedAndNamed) {
    SchemaLimits lim;
    EXPECT_EQ(error_of(nest(60), lim), "");
    expect_rejected({{nest(70), {"max_depth (64)"}}}, lim);

    lim = {};
    lim.max_json_depth = 10;
    expect_rejected({{nest(12), {"max_json_depth (10)"}}, {R"({"const":[[[[[[[[[[[1]]]]]]]]]]]})", {"max_json_depth (10)"}}}, lim);

    lim           = {};
    lim.max_nodes = 10;
    std::string props;
    for (int i = 0; i < 20; ++i) props += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":{}";
    expect_rejected({{R"({"properties":{)" + props + "}}", {"max_nodes (10)"}}}, lim);

    lim          = {};
    lim.max_enum = 10;
    EXPECT_EQ(error_of(R"({"enum":[0,1,2,3,4,5,6,7,8,9]})", lim), "");
    expect_rejected({{R"({"enum":[0,1,2,3,4,5,6,7,8,9,10]})", {"11 values", "max_enum (10)"}}}, lim);

    lim = {};
    EXPECT_EQ(error_of(R"({"type":"string","maxLength":10000})", lim), "");
    expect_rejected({{R"({"type":"string","maxLength":10001})", {"\"maxLength\" 10001", "max_repeat (10000)"}},
                     {R"({"type":"array","minItems":20000})", {"\"minItems\" 20000", "max_repeat"}},
                     {R"({"pattern":"^a{20000}$"})", {"max_repeat (10000)"}},
                     {R"({"pattern":"^(a{200}){100}$"})", {"max_repeat (10000)"}}},
                    lim);

    lim                    = {};
    lim.max_pattern_length = 8;
    expect_rejected({{R"({"pattern":"^abcdefgh$"})", {"max_pattern_length (8)"}}}, lim);

    lim                   = {};
    lim.max_pattern_depth = 3;
    EXPECT_EQ(error_of(R"({"pattern":"^(((a)))$"})", lim), "");
    expect_rejected({{R"({"pattern":"^((((a))))$"})", {"max_pattern_depth (3)"}}}, lim);

    lim                   = {};
    lim.max_grammar_bytes = 2000;
    std::string values;
    for (int i = 0; i < 300; ++i) values += (i ? "," : "") + std::string("\"value-") + std::to_string(i) + "\"";
    expect_rejected({{R"({"enum":[)" + values + "]}", {"max_grammar_bytes (2000)"}},
                     {R"({"properties":{"a":{"type":"integer","minimum":-123456789,"maximum":987654321}},"required":["a"],)"
                      R"("additionalProperties":{"type":"string","pattern":"^[a-z]{1,9000}$"}})",
                      {"max_grammar_bytes (2000)"}}},
                    lim);
}

// Large counts stay small in text: chunks of 32 chained, not 10,000 copies.
TEST(JsonSchema, LargeCountsStaySmall) {
    const auto g = schema_to_grammar(R"({"type":"array","items":{"type":"string","maxLength":10000},"minItems":5000,"maxItems":10000})");
    EXPECT_LT(g.size(), 60000u) << g.size();
    EXPECT_TRUE(llama_parses(g));
}

// The api layer passes the schema as text; properties keep the order written there.
TEST(JsonSchema, PropertiesKeepDeclaredOrder) {
    const auto g = schema_to_grammar(R"({"type":"object","properties":{"zeta":{"type":"null"},"alpha":{"type":"null"}},"required":["zeta","alpha"]})");
    EXPECT_LT(g.find("zeta"), g.find("alpha")) << g;
}

// As Ollama serves them: with a list to name them in, what the grammar cannot enforce is
// accepted (the value is generated without it) and named once per keyword and place.
TEST(JsonSchema, UnenforceableKeywordsAreAcceptedAndNamed) {
    const std::string schema =
        R"({"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"uniqueItems":true},)"
        R"("mail":{"type":"string","format":"idn-email"},"n":{"type":"integer","multipleOf":7},)"
        R"("a":{"$ref":"#/$defs/p"},"b":{"$ref":"#/$defs/p"},"c":{"not":{"type":"null"},"nullable":true}},)"
        R"("required":["tags"],"if":{"required":["a"]},"then":{"required":["b"]},"patternProperties":{"^x":{}},)"
        R"("$defs":{"p":{"type":"string","propertyNames":{"maxLength":3}}}})";
    std::vector<std::string> unenforced;
    const std::string        g = schema_to_grammar(schema, SchemaLimits{}, &unenforced);
    EXPECT_TRUE(llama_parses(g)) << g;
    const std::vector<std::string> want = {
        "\"if\" at /", "\"then\" at /", "\"patternProperties\" at /", "\"uniqueItems\" at /properties/tags",
        "\"format\" at /properties/mail", "\"multipleOf\" at /properties/n", "\"propertyNames\" at /$defs/p",
        "\"not\" at /properties/c", "\"nullable\" at /properties/c",
    };
    EXPECT_EQ(unenforced.size(), want.size()) << ::testing::PrintToString(unenforced);
    for (const auto & w : want) {
        const auto n = std::count_if(unenforced.begin(), unenforced.end(), [&](const std::string & u) { return u.starts_with(w); });
        EXPECT_EQ(n, 1) << w << " in " << ::testing::PrintToString(unenforced); // /$defs/p reached twice, named once
    }
    for (const auto & u : unenforced) EXPECT_NE(u.find(" is not enforced ("), std::string::npos) << u;
    // The same schema strict: refused, naming the first.
    EXPECT_THROW(schema_to_grammar(schema), specd::Error);
    // Malformed values stay errors either way.
    std::vector<std::string> ignored;
    EXPECT_THROW(schema_to_grammar(R"({"type":"integer","multipleOf":0})", SchemaLimits{}, &ignored), specd::Error);
    EXPECT_THROW(schema_to_grammar(R"({"type":"integer","minimum":1,"maximum":4,"multipleOf":5})", SchemaLimits{}, &ignored), specd::Error);
}
