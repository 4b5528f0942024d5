// JSON Schema -> GBNF checked by llama.cpp's real grammar sampler: per schema, texts that
// must be accepted and texts that must not (the table style of llama.cpp's
// tests/test-grammar-integration.cpp). Runs on the phi-3 fixture's vocabulary.
#include "grammar/json_schema.h"
#include "grammar_table.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>

using namespace specd;
using grammar_test::check_gbnf;
using grammar_test::probe;

namespace {

struct Case {
    std::string              name;
    std::string              schema;
    std::vector<std::string> pass;
    std::vector<std::string> fail;
};

void check(const Case & c) {
    std::string gbnf;
    try {
        gbnf = grammar::schema_to_grammar(c.schema);
    } catch (const std::exception & e) {
        FAIL() << c.name << ": " << e.what();
    }
    check_gbnf(c.name, gbnf, c.pass, c.fail);
}

std::string repeat(const std::string & s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

std::string join(const std::vector<std::string> & parts) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? "," : "") + parts[i];
    return out;
}

const std::string k_bbox_schema =
    R"({"type":"array","minItems":6,"maxItems":6,"items":{"type":"object","properties":{"label":{"type":"string"},)"
    R"("bbox":{"type":"array","items":{"type":"integer"},"minItems":4,"maxItems":4}},"required":["label","bbox"]}})";

std::string bbox_items(int n) {
    std::vector<std::string> items;
    for (int i = 0; i < n; ++i) items.push_back(R"({"label":"cat )" + std::to_string(i) + R"(","bbox":[1,-2,30,400]})");
    return "[" + join(items) + "]";
}

std::string enum_schema(int n) {
    std::vector<std::string> values;
    for (int i = 0; i < n; ++i) values.push_back("\"v" + std::to_string(i) + "\"");
    return R"({"enum":[)" + join(values) + "]}";
}

} // namespace

TEST(SchemaGrammar, FixtureHasByteTokens) {
    ASSERT_TRUE(probe().complete()) << "the fixture vocabulary lacks <0x..> byte tokens";
}

TEST(SchemaGrammar, BboxContract) {
    check({"bbox",
           k_bbox_schema,
           {bbox_items(6), R"([{"label":"","bbox":[0,0,0,0]},{"label":"a\"b","bbox":[1,2,3,4]},{"label":"\u00e9","bbox":[9,9,9,9]},)"
                           R"({"label":"x","bbox":[1,2,3,4]},{"label":"y","bbox":[1,2,3,4]},{"label":"z","bbox":[1,2,3,4]}])"},
           {bbox_items(5), bbox_items(7), "[]", bbox_items(6).substr(0, 40),
            "[ " + bbox_items(6).substr(1),                                  // whitespace
            R"([{"bbox":[1,2,3,4],"label":"x"}])",                           // order
            R"([{"label":"x","bbox":[1,2,3]},)" + bbox_items(6).substr(1),  // 3 numbers
            R"([{"label":"x","bbox":[1,2,3,4.5]},)" + bbox_items(5).substr(1),
            R"([{"label":"x","bbox":[1,2,3,4],"extra":1},)" + bbox_items(5).substr(1),
            R"([{"bbox":[1,2,3,4]},)" + bbox_items(5).substr(1)}});
}

// Compact output forces the structure: after a value only the next token is legal.
TEST(SchemaGrammar, StructureIsForced) {
    auto g = probe().compile(grammar::schema_to_grammar(k_bbox_schema));
    ASSERT_TRUE(g);
    using Bytes = std::set<unsigned char>;
    EXPECT_EQ(probe().next_bytes(g.get(), ""), Bytes{'['});
    EXPECT_EQ(probe().next_bytes(g.get(), "["), Bytes{'{'});
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat")"), Bytes{','});
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat",)"), Bytes{'"'});
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat","bbox":)"), Bytes{'['});
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat","bbox":[1,2,3,4)"), (Bytes{'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ']'}));
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat","bbox":[1,2,3,4])"), Bytes{'}'});
    EXPECT_EQ(probe().next_bytes(g.get(), R"([{"label":"cat","bbox":[1,2,3,4]})"), Bytes{','}); // 5 more to come
}

TEST(SchemaGrammar, NestedRecord) {
    const std::string person = R"({"type":"object","properties":{
        "name":{"type":"string","minLength":1},
        "age":{"type":"integer","minimum":0,"maximum":150},
        "email":{"type":["string","null"]},
        "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"},
                   "zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["street","city"]},
        "tags":{"type":"array","items":{"type":"string"},"maxItems":3},
        "nickname":{"type":"string"}},
      "required":["name","age","email","address"]})";
    const std::string base = R"("name":"Ann","age":30,"email":null,"address":{"street":"Main St","city":"Oslo"})";
    check({"person",
           person,
           {"{" + base + "}", "{" + base + R"(,"tags":[]})", "{" + base + R"(,"tags":["a","b","c"],"nickname":"A"})",
            "{" + base + R"(,"nickname":"A"})",
            R"({"name":"B","age":0,"email":"b@x.org","address":{"street":"s","city":"c","zip":"01234"}})",
            R"({"name":"B","age":150,"email":null,"address":{"street":"s","city":"c"},"tags":["x"]})"},
           {R"({"name":"","age":30,"email":null,"address":{"street":"s","city":"c"}})",
            R"({"name":"B","age":151,"email":null,"address":{"street":"s","city":"c"}})",
            R"({"name":"B","age":-1,"email":null,"address":{"street":"s","city":"c"}})",
            R"({"name":"B","age":1,"address":{"street":"s","city":"c"}})",
            R"({"name":"B","age":1,"email":null,"address":{"street":"s","city":"c","zip":"1234"}})",
            R"({"name":"B","age":1,"email":null,"address":{"city":"c","street":"s"}})",
            "{" + base + R"(,"tags":["a","b","c","d"]})", "{" + base + R"(,"nickname":"A","tags":[]})",
            "{" + base + R"(,"other":1})", "{" + base + ",}"}});
}

TEST(SchemaGrammar, DeepNesting) {
    std::string schema = R"({"type":"integer"})", pass = "7";
    for (int i = 0; i < 20; ++i) {
        schema = R"({"type":"object","properties":{"a":)" + schema + R"(},"required":["a"]})";
        pass   = R"({"a":)" + pass + "}";
    }
    check({"depth 20", schema, {pass}, {pass.substr(0, pass.size() - 1), pass + "}", R"({"a":7})"}});
}

TEST(SchemaGrammar, LargeEnum) {
    check({"500-value enum",
           enum_schema(500),
           {"\"v0\"", "\"v499\"", "\"v123\"", "\"v50\""},
           {"\"v500\"", "\"v\"", "\"v1234\"", "\"v01\"", "v1", "\"V1\""}});
    check({"mixed enum",
           R"({"enum":["red",1,1.5,null,true,{"a":[1]},[2,"x"],"r\"q"]})",
           {"\"red\"", "1", "1.5", "null", "true", R"({"a":[1]})", R"([2,"x"])", R"("r\"q")"},
           {"\"re\"", "15", "false", R"({"a":[2]})", "\"Red\"", "1.50"}});
}

TEST(SchemaGrammar, IntegerBounds) {
    check({"[-15,127]",
           R"({"type":"integer","minimum":-15,"maximum":127})",
           {"-15", "-9", "-10", "-1", "0", "5", "99", "100", "127"},
           {"-16", "-20", "128", "200", "-0", "01", "1.0", "1e2", "-"}});
    check({"exclusive", R"({"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":3})", {"-2", "0", "2"}, {"-3", "3"}});
    check({"non-integral bounds", R"({"type":"integer","minimum":1.5,"maximum":7.9})", {"2", "7"}, {"1", "8", "0"}});
    check({"negative only", R"({"type":"integer","maximum":-10})", {"-10", "-11", "-100", "-99999"}, {"-9", "0", "5", "-1"}});
    check({"minimum 0", R"({"type":"integer","minimum":0})", {"0", "1", "9999", "1234567890123456"}, {"-1", "-0", "12345678901234567"}});
    check({"plain", R"({"type":"integer"})", {"0", "-5", "42"}, {"-0", "01", "1.5", "\"1\""}});

    // Every value around a few ranges, accepted exactly when inside.
    for (auto [lo, hi] : {std::pair{-15, 127}, {-3, 3}, {7, 7}, {-120, -99}, {0, 1000}, {95, 105}, {-1005, -995}}) {
        const auto gbnf = grammar::schema_to_grammar(R"({"type":"integer","minimum":)" + std::to_string(lo) +
                                                     R"(,"maximum":)" + std::to_string(hi) + "}");
        auto g = probe().compile(gbnf);
        ASSERT_TRUE(g);
        for (int v = lo - 40; v <= hi + 40; ++v)
            EXPECT_EQ(probe().accepts(g.get(), std::to_string(v)), v >= lo && v <= hi) << v << " in [" << lo << "," << hi << "]";
    }
}

TEST(SchemaGrammar, NumberBounds) {
    check({"[0,1]", R"({"type":"number","minimum":0,"maximum":1})", {"0", "0.5", "1", "1.0", "1.000", "0.999", "0.0"},
           {"1.5", "1.01", "-0.5", "-1", "2", "1e0", "-0"}});
    check({"minimum 0", R"({"type":"number","minimum":0})", {"0", "3.14", "100", "0.001"}, {"-1", "-0.5", "-0"}});
    check({"(0,10]", R"({"type":"number","exclusiveMinimum":0,"maximum":10})", {"0.1", "0.001", "5", "10", "9.99"},
           {"0", "0.0", "10.5", "-1", "10.01"}});
    check({"[-2,-1)", R"({"type":"number","minimum":-2,"exclusiveMaximum":-1})", {"-2", "-2.0", "-1.5", "-1.01"},
           {"-1", "-1.0", "-2.5", "0", "-0.5"}});
    check({"(-1,1)", R"({"type":"number","exclusiveMinimum":-1,"exclusiveMaximum":1})", {"0", "-0.5", "0.99", "-0.001"},
           {"1", "-1", "1.0", "-1.0"}});
    check({"plain", R"({"type":"number"})", {"1", "-1.5", "1e10", "2.5E-3", "0.25"}, {"01", "1.", ".5", "+1"}});
}

// Every number a grammar allows is finite as a double: exponents stop at 292, where the
// largest number the grammar can spell is still below DBL_MAX (1.8e308).
TEST(SchemaGrammar, NumbersStayFiniteAsDoubles) {
    const std::string largest = "-9999999999999999.9999999999999999e+292";
    const std::vector<std::string> pass = {"1e292", "1E-292", "9999999999999999e292", largest, "1e99", "5e09", "1e0"};
    const std::vector<std::string> fail = {"1e293", "1e300", "-9987499874998749E499", "1e999", "1e0292"};
    check({"number", R"({"type":"number"})", pass, fail});
    check({"array of numbers", R"({"type":"array","items":{"type":"number"}})", {"[" + largest + "]"}, {"[1e293]"}});
    check_gbnf("format json", grammar::json_object_grammar(), {"{\"a\":" + largest + "}"}, {"{\"a\":1e293}"});
    for (const auto & text : pass) {
        const double v = nlohmann::json::parse(text).get<double>();
        EXPECT_TRUE(std::isfinite(v)) << text << " parses as " << v;
    }
}

TEST(SchemaGrammar, StringLengths) {
    check({"2..4", R"({"type":"string","minLength":2,"maxLength":4})",
           {R"("ab")", R"("abcd")", R"("a\nb")", R"("\u00e9x")", "\"\xC3\xA9!\"", R"("\"\\")"},
           {R"("a")", R"("abcde")", R"("\n")", R"("")", R"("abc\n\n")"}});
    check({"max 40", R"({"type":"string","maxLength":40})", {"\"" + std::string(40, 'x') + "\"", "\"\""},
           {"\"" + std::string(41, 'x') + "\""}});
    check({"min 100", R"({"type":"string","minLength":100})", {"\"" + std::string(100, 'x') + "\"", "\"" + std::string(150, 'x') + "\""},
           {"\"" + std::string(99, 'x') + "\""}});
    check({"max 1000", R"({"type":"string","maxLength":1000})", {"\"" + std::string(1000, 'y') + "\"", "\"" + std::string(33, 'y') + "\""},
           {"\"" + std::string(1001, 'y') + "\""}});
    check({"plain", R"({"type":"string"})", {R"("")", R"("a b\t\"\\\/\b\f\n\r\u0041")"}, {"\"a\nb\"", R"("\x")", R"("\u12")", "\"a"}});
}

TEST(SchemaGrammar, Patterns) {
    const auto pat = [](const std::string & p) { return R"({"type":"string","pattern":)" + nlohmann::json(p).dump() + "}"; };
    check({"class+count", pat("^[a-z]+[0-9]{2,3}$"), {R"("abc12")", R"("x123")"}, {R"("abc1")", R"("abc1234")", R"("ABC12")", R"("12")"}});
    check({"phone", pat("^\\d{3}-\\d{4}$"), {R"("555-1234")"}, {R"("5551234")", R"("555-12345")"}});
    check({"group+", pat("^(foo|bar)+$"), {R"("foo")", R"("foobar")", R"("barbarfoo")"}, {R"("")", R"("fo")", R"("foob")"}});
    check({"unanchored", pat("\\d"), {R"("abc1xyz")", R"("1")", R"("a\n2")"}, {R"("abc")", R"("")"}});
    check({"dot", pat("^a.c$"), {R"("abc")", R"("a c")", R"("a\"c")", R"("a\\c")", R"("a\tc")"}, {R"("ac")", R"("a\nc")", R"("abbc")"}});
    check({"negated", pat("^[^a]$"), {R"("b")", R"("\"")", R"("\\")", "\"\xC3\xA9\""}, {R"("a")", R"("")", R"("bb")"}});
    check({"email-ish", pat("^\\w+@\\w+\\.com$"), {R"("me@x.com")", R"("a_b@c1.com")"}, {R"("me@x.org")", R"("me@x!com")"}});
    check({"optional group", pat("^(?:a|b)?c{2}$"), {R"("cc")", R"("acc")", R"("bcc")"}, {R"("c")", R"("abcc")"}});
    check({"space class", pat("^[A-Z]{2}\\s[0-9]$"), {R"("AB 1")", R"("AB\t1")"}, {R"("AB1")"}});
    check({"quote literal", pat("^\"q\"$"), {R"("\"q\"")"}, {R"("q")"}});
    check({"empty", pat("^$"), {R"("")"}, {R"("a")"}});
    check({"anchors per alternative", pat("^ab|cd$"), {R"("abxxx")", R"("xxcd")", R"("ab")"}, {R"("xab")", R"("cdx")"}});
    check({"escapes", pat("^\\.\\*\\x41\\u0042[\\-\\]]$"), {R"(".*AB-")", R"(".*AB]")"}, {R"("x*AB-")"}});
    check({"lazy + braces", pat("^a{2,}?b{0,1}x{1}$"), {R"("aax")", R"("aaaabx")"}, {R"("ax")", R"("aabbx")"}});
    check({"big count", pat("^[0-9a-f]{64}$"), {"\"" + std::string(64, 'f') + "\""}, {"\"" + std::string(63, 'f') + "\""}});
    check({"length implied", R"({"type":"string","pattern":"^[a-z]{3,5}$","minLength":2,"maxLength":5})", {R"("abc")"}, {R"("ab")"}});
}

TEST(SchemaGrammar, Formats) {
    check({"date", R"({"type":"string","format":"date"})", {R"("2024-02-29")", R"("1999-12-31")"},
           {R"("2024-13-01")", R"("2024-1-01")", R"("2024-00-10")", R"("2024-01-32")"}});
    check({"time", R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("08:00:00.123+02:00")"}, {R"("24:00:00Z")", R"("12:00")"}});
    check({"date-time", R"({"format":"date-time"})", {R"("2024-01-01T12:00:00Z")", R"("2024-01-01T12:00:00.5-05:30")"},
           {R"("2024-01-01 12:00:00Z")", R"("2024-01-01")"}});
    check({"uuid", R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
           {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}});
}

TEST(SchemaGrammar, Combinators) {
    check({"anyOf", R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]})", {R"("x")", "5", "0"}, {"-1", "null", "1.5"}});
    check({"oneOf tagged",
           R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind","x"]},
                        {"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind","y"]}]})",
           {R"({"kind":"a","x":1})", R"({"kind":"b","y":"s"})"},
           {R"({"kind":"a","y":"s"})", R"({"kind":"c","x":1})", R"({"kind":"b"})"}});
    check({"siblings merged", R"({"type":"string","anyOf":[{"minLength":3},{"pattern":"^x"}]})", {R"("abc")", R"("x")", R"("xy")"},
           {R"("ab")", "1"}});
    check({"allOf single", R"({"allOf":[{"$ref":"#/$defs/P"}],"$defs":{"P":{"type":"integer","minimum":0}}})", {"1"}, {"-1", "\"a\""}});
    check({"optional (pydantic)", R"({"anyOf":[{"type":"integer"},{"type":"null"}],"default":null,"title":"N"})", {"1", "null"}, {"\"1\""}});
}

TEST(SchemaGrammar, Refs) {
    check({"defs",
           R"({"$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}},
               "type":"array","items":{"$ref":"#/$defs/Point"}})",
           {"[]", R"([{"x":1,"y":2},{"x":-3,"y":0}])"},
           {R"([{"x":1}])", R"([{"y":2,"x":1}])"}});
    check({"pointer escapes",
           R"({"definitions":{"a/b":{"type":"integer"},"c~d":{"type":"boolean"},"e f":{"type":"null"}},"type":"object",
               "properties":{"p":{"$ref":"#/definitions/a~1b"},"q":{"$ref":"#/definitions/c~0d"},"r":{"$ref":"#/definitions/e%20f"}},
               "required":["p","q","r"]})",
           {R"({"p":1,"q":true,"r":null})"},
           {R"({"p":true,"q":1,"r":null})"}});
    check({"recursive tree",
           R"({"$defs":{"node":{"type":"object","properties":{"value":{"type":"integer"},
               "children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["value"]}},"$ref":"#/$defs/node"})",
           {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[]},{"value":3,"children":[{"value":4}]}]})"},
           {R"({"value":1,"children":[{}]})", R"({"children":[]})"}});
    check({"root recursion", R"({"type":"object","properties":{"next":{"$ref":"#"}}})", {"{}", R"({"next":{"next":{}}})"},
           {R"({"next":1})"}});
}

TEST(SchemaGrammar, ConstAndTypeArrays) {
    check({"const object", R"({"const":{"a":[1,"x"]}})", {R"({"a":[1,"x"]})"}, {R"({"a":[1,"y"]})", R"({"a": [1,"x"]})"}});
    check({"const in object", R"({"type":"object","properties":{"v":{"const":42}},"required":["v"]})", {R"({"v":42})"}, {R"({"v":43})"}});
    check({"string or null", R"({"type":["string","null"]})", {R"("a")", "null"}, {"1", "true"}});
    check({"integer or boolean", R"({"type":["integer","boolean"],"minimum":5})", {"5", "true", "false"}, {"4", "null"}});
    check({"enum filtered by type", R"({"type":"string","enum":["a",1,"b"]})", {R"("a")", R"("b")"}, {"1"}});
}

TEST(SchemaGrammar, ObjectsAndExtras) {
    check({"extras with a schema",
           R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})",
           {"{}", R"({"a":1})", R"({"a":1,"b":"x"})", R"({"b":"x"})", R"({"b":"x","c":"y"})", R"({"ab":"x"})", R"({"":"x"})"},
           {R"({"a":"x"})", R"({"b":1})", R"({"b":"x","a":1})"}});
    check({"any object", R"({"type":"object"})", {"{}", R"({"x":[1,{"y":null}],"z":"w"})"}, {" {}", R"({"x":1 })", "[]"}});
    check({"no extras by default", R"({"type":"object","properties":{"a":{"type":"integer"}}})", {"{}", R"({"a":1})"}, {R"({"b":1})"}});
    check({"all optional",
           R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},"d":{"type":"integer"}}})",
           {"{}", R"({"a":1})", R"({"b":1,"d":1})", R"({"a":1,"b":1,"c":1,"d":1})", R"({"d":4})"},
           {R"({"b":1,"a":1})", "{,}", R"({"a":1,})", R"({"a":1,"a":1})"}});
    check({"required in the middle",
           R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["b"]})",
           {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":1,"c":2})", R"({"a":1,"b":2,"c":3})"},
           {"{}", R"({"a":1})", R"({"a":1,"c":3})"}});
    check({"required without properties", R"({"type":"object","required":["id"]})", {R"({"id":1})", R"({"id":"x","z":2})"}, {"{}"}});
}

TEST(SchemaGrammar, Arrays) {
    check({"tuple", R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})", {"[]", R"(["a"])", R"(["a",1])"},
           {R"(["a",1,2])", "[1]"}});
    check({"tuple + items", R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minItems":2})",
           {R"(["a",1])", R"(["a",1,2])"}, {R"(["a"])", R"(["a","b"])"}});
    check({"50..100", R"({"type":"array","items":{"type":"integer"},"minItems":50,"maxItems":100})",
           {"[" + join(std::vector<std::string>(50, "1")) + "]", "[" + join(std::vector<std::string>(100, "1")) + "]"},
           {"[" + join(std::vector<std::string>(49, "1")) + "]", "[" + join(std::vector<std::string>(101, "1")) + "]"}});
    check({"any array", R"({"type":"array"})", {"[]", R"([1,"a",null,[{}]])"}, {"[1,]", "[ 1]"}});
    check({"items false", R"({"type":"array","items":false})", {"[]"}, {"[1]"}});
}

TEST(SchemaGrammar, WhitespaceCompactVersusFormatJson) {
    const std::vector<std::string> spaced = {R"({"a": 1})", "{\n  \"a\": [1, 2],\n  \"b\": {\"c\": null}\n}", "{ }", "{  }",
                                             "{\"a\":[\n\n\t1]}", R"({"a": "x", "b": [ ]})"};
    check({"compact rejects whitespace", R"({"type":"object"})", {R"({"a":1})"}, spaced});
    check_gbnf("format json", grammar::json_object_grammar(), spaced,
               {" {}", "{} ", "[1]", "{\n" + std::string(25, ' ') + "\"a\":1}", "{\"a\":1\n\n\n}", "\"x\"",
                R"({"a" :1})", R"({"a":1 ,"b":2})", "{   }"});
}

// Not asserted: grammar sizes and compile times for the report.
TEST(SchemaGrammar, SizesAndTimes) {
    for (const auto & [name, schema] : {std::pair{"bbox", k_bbox_schema}, {"enum500", enum_schema(500)}}) {
        const auto t0   = std::chrono::steady_clock::now();
        const auto gbnf = grammar::schema_to_grammar(schema);
        const auto t1   = std::chrono::steady_clock::now();
        auto       g    = probe().compile(gbnf);
        const auto t2   = std::chrono::steady_clock::now();
        ASSERT_TRUE(g);
        std::printf("[ sizes    ] %-8s grammar %6zu bytes, compile %.2f ms, llama.cpp parse %.2f ms\n", name, gbnf.size(),
                    std::chrono::duration<double, std::milli>(t1 - t0).count(),
                    std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
}

// The formats Pydantic and Zod emit, as the shapes a validator of the answer accepts.
TEST(SchemaGrammar, CommonStringFormats) {
    check({"email", R"({"type":"string","format":"email"})",
           {R"("a.b+c@example.com")", R"("x_1@mail.example.org")"},
           {R"("a@b")", R"("@x.com")", R"("a b@x.com")", R"("a@-x.com")", R"("a..b@x.com")"}});
    check({"hostname", R"({"type":"string","format":"hostname"})",
           {R"("localhost")", R"("a-b.example.com")", R"("x1")"},
           {R"("-x.com")", R"("a..b")", R"("x-.com")", R"("a_b.com")", R"("")"}});
    check({"ipv4", R"({"type":"string","format":"ipv4"})",
           {R"("192.168.0.1")", R"("0.0.0.0")", R"("255.255.255.255")"},
           {R"("256.1.1.1")", R"("1.2.3")", R"("01.2.3.4")", R"("1.2.3.4.5")"}});
    check({"uri", R"({"type":"string","format":"uri"})",
           {R"("https://example.com/a?b=c#d")", R"("mailto:x@y.z")", R"("urn:isbn:0451450523")"},
           {R"("no scheme")", R"("http://a b")", R"("1http://x")", R"("http:")"}});
}

// multipleOf where a grammar writes it: the multiples of a bounded range, a power of ten, a
// decimal step.
TEST(SchemaGrammar, MultipleOfWhereItCanBeWritten) {
    check({"bounded", R"({"type":"integer","minimum":-7,"maximum":20,"multipleOf":5})",
           {"-5", "0", "5", "10", "15", "20"},
           {"-10", "25", "3", "7", "-7", "05"}});
    check({"hundreds", R"({"type":"integer","multipleOf":100})",
           {"0", "100", "-300", "12300"},
           {"50", "10", "1001", "-0", "00"}});
    check({"cents", R"({"type":"number","multipleOf":0.01})",
           {"1", "1.5", "-3.25", "0.01"},
           {"1.234", "1e3", "0.001"}});
    check({"even number", R"({"type":"number","minimum":0,"maximum":6,"multipleOf":2})",
           {"0", "2", "4", "6"},
           {"1", "8", "2.0"}});
    check({"every integer", R"({"type":"integer","multipleOf":0.5})", {"0", "-17", "3"}, {"1.5"}});
}

TEST(SchemaGrammar, PropertyCountsWhereTheShapeImpliesThem) {
    check({"min 1 over optional", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"minProperties":1})",
           {R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
           {"{}"}});
    check({"max within declared", R"({"type":"object","properties":{"a":{"type":"integer"}},"maxProperties":1,"minProperties":0})",
           {"{}", R"({"a":1})"},
           {R"({"a":1,"b":2})"}});
}
