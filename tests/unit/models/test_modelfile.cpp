#include "models/modelfile.h"

#include <gtest/gtest.h>

#include <string>

using namespace specd::models;

namespace {

// The error a Modelfile gives, or "" when it parses.
std::string parse_error(std::string_view text) {
    try {
        parse_modelfile(text);
        return "";
    } catch (const ModelfileError & e) {
        return e.what();
    }
}

} // namespace

TEST(Modelfile, FullExample) {
    const auto mf = parse_modelfile(R"(# a comment
FROM ./tiny.gguf
FROM ./mmproj.gguf
DRAFT ./draft.gguf

PARAMETER temperature 0.7
PARAMETER num_ctx 4096
PARAMETER stop "<|im_end|>"
PARAMETER stop <|endoftext|>
PARAMETER seed -1
PARAMETER draft_num_predict 8
SYSTEM You are a helpful assistant.
TEMPLATE """{{ .System }}
{{ .Prompt }}"""
LICENSE MIT
MESSAGE user Hello there
MESSAGE assistant "Hi! How can I help?"
ADAPTER ./lora.gguf
)");
    EXPECT_EQ(mf.from, (std::vector<std::string>{"./tiny.gguf", "./mmproj.gguf"}));
    EXPECT_EQ(mf.draft, "./draft.gguf");
    EXPECT_EQ(mf.params.temperature, 0.7);
    EXPECT_EQ(mf.params.num_ctx, 4096);
    EXPECT_EQ(mf.params.seed, -1);
    EXPECT_EQ(mf.params.draft_num_predict, 8);
    EXPECT_EQ(mf.params.stop, (std::vector<std::string>{"<|im_end|>", "<|endoftext|>"}));
    EXPECT_EQ(mf.system, "You are a helpful assistant.");
    EXPECT_EQ(mf.template_text, "{{ .System }}\n{{ .Prompt }}");
    EXPECT_EQ(mf.licenses, (std::vector<std::string>{"MIT"}));
    ASSERT_EQ(mf.messages.size(), 2u);
    EXPECT_EQ(mf.messages[0], (ModelfileMessage{"user", "Hello there"}));
    EXPECT_EQ(mf.messages[1], (ModelfileMessage{"assistant", "Hi! How can I help?"}));
    EXPECT_EQ(mf.adapters, (std::vector<std::string>{"./lora.gguf"}));
}

TEST(Modelfile, InstructionsAreCaseInsensitive) {
    const auto mf = parse_modelfile("from tiny\nParameter TOP_K 20\nsystem hi\nMeSsAgE USER hello\n");
    EXPECT_EQ(mf.from[0], "tiny");
    EXPECT_EQ(mf.params.top_k, 20);
    EXPECT_EQ(mf.system, "hi");
    EXPECT_EQ(mf.messages[0].role, "user");
}

TEST(Modelfile, Values) {
    struct Case {
        const char * text;
        const char * system;
    };
    const Case cases[] = {
        {"FROM x\nSYSTEM plain text  \n", "plain text"},
        {"FROM x\nSYSTEM   \"quoted  \"  \n", "quoted  "},
        {"FROM x\nSYSTEM \"\"\n", ""},
        {"FROM x\nSYSTEM \"\"\"\"\"\"\n", ""},
        {"FROM x\nSYSTEM \"\"\"\nline one\n  line two\n\"\"\"\n", "\nline one\n  line two\n"},
        {"FROM x\nSYSTEM \"two\nlines\"\n", "two\nlines"},
        {"FROM x\nSYSTEM \"she said \"hi\"\"\n", "she said \"hi\""},
        {"FROM x\nSYSTEM \"\"\"a \"quoted\" word\"\"\"\n", "a \"quoted\" word"},
        {"FROM x\nSYSTEM # not a comment\n", "# not a comment"},
        {"FROM x\nSYSTEM \"\"\"keeps\n# this line\n\"\"\"\n", "keeps\n# this line\n"},
        {"FROM x\nSYSTEM back\\slash \\n stays\n", "back\\slash \\n stays"},
        {"FROM x\nSYSTEM first\nSYSTEM second\n", "second"},
        {"FROM x\r\nSYSTEM windows\r\n", "windows"},
        {"\xEF\xBB\xBF" "FROM x\nSYSTEM bom\n", "bom"},
        {"FROM x\nSYSTEM caf\xC3\xA9 \xE2\x9C\x93\n", "caf\xC3\xA9 \xE2\x9C\x93"},
        {"FROM x\n\tSYSTEM\tindented\n", "indented"},
    };
    for (const auto & c : cases) {
        Modelfile mf;
        ASSERT_NO_THROW(mf = parse_modelfile(c.text)) << c.text << ": " << parse_error(c.text);
        EXPECT_EQ(mf.system, c.system) << c.text;
    }
}

TEST(Modelfile, CommentsAndBlankLines) {
    const auto mf = parse_modelfile("\n\n   # leading comment\n#FROM nope\nFROM tiny # not a comment\n\n");
    EXPECT_EQ(mf.from, (std::vector<std::string>{"tiny # not a comment"}));
}

TEST(Modelfile, ParametersAreTyped) {
    const auto mf = parse_modelfile(R"(FROM x
PARAMETER num_ctx 8192
PARAMETER num_predict -2
PARAMETER num_keep -1
PARAMETER temperature 0
PARAMETER top_k 40
PARAMETER top_p 0.95
PARAMETER min_p 0.05
PARAMETER typical_p 1
PARAMETER repeat_penalty 1.1
PARAMETER repeat_last_n -1
PARAMETER presence_penalty -0.5
PARAMETER frequency_penalty +0.5
PARAMETER seed 42
PARAMETER num_batch 256
PARAMETER num_thread 0
PARAMETER draft_num_predict 0
)");
    const Parameters & p = mf.params;
    EXPECT_EQ(p.num_ctx, 8192);
    EXPECT_EQ(p.num_predict, -2);
    EXPECT_EQ(p.num_keep, -1);
    EXPECT_EQ(p.temperature, 0.0);
    EXPECT_EQ(p.top_k, 40);
    EXPECT_EQ(p.top_p, 0.95);
    EXPECT_EQ(p.min_p, 0.05);
    EXPECT_EQ(p.typical_p, 1.0);
    EXPECT_EQ(p.repeat_penalty, 1.1);
    EXPECT_EQ(p.repeat_last_n, -1);
    EXPECT_EQ(p.presence_penalty, -0.5);
    EXPECT_EQ(p.frequency_penalty, 0.5);
    EXPECT_EQ(p.seed, 42);
    EXPECT_EQ(p.num_batch, 256);
    EXPECT_EQ(p.num_thread, 0);
    EXPECT_EQ(p.draft_num_predict, 0);
    EXPECT_TRUE(p.stop.empty());
}

TEST(Modelfile, ErrorsCarryTheLineNumber) {
    struct Case {
        const char * text;
        const char * error_part;
    };
    const Case cases[] = {
        {"", "no FROM line"},
        {"# only a comment\n", "no FROM line"},
        {"SYSTEM hi\n", "no FROM line"},
        {"FROM\n", "line 1: FROM needs a value"},
        {"FROM   \n", "line 1: FROM needs a value"},
        {"FROM \"\"\n", "line 1: FROM needs a value"},
        {"FROM x\nDRAFT\n", "line 2: DRAFT needs a value"},
        {"FROM x\nDRAFT a\nDRAFT b\n", "line 3: only one DRAFT"},
        {"FROM x\nBOGUS y\n", "line 2: unknown instruction: BOGUS"},
        {"FROM x\nRENDERERS qwen3\n", "line 2: unknown instruction: RENDERERS"},
        {"FROM x\nREQUIRES\n", "line 2: REQUIRES needs a value"},
        {"FROM x\n  : y\n", "line 2: expected an instruction"},
        {"FROM x\nFROM:y\n", "line 2: expected an instruction"},
        {"FROM x\n\nPARAMETER num_gqa 2\n", "line 3: unknown parameter: num_gqa"},
        {"FROM x\nPARAMETER low_vram true\n", "line 2: unknown parameter: low_vram"},
        {"FROM x\nPARAMETER\n", "line 2: PARAMETER needs a name and a value"},
        {"FROM x\nPARAMETER temperature\n", "line 2: PARAMETER temperature needs a value"},
        {"FROM x\nPARAMETER temperature hot\n", "line 2: invalid value for parameter temperature"},
        {"FROM x\nPARAMETER temperature -1\n", "line 2: invalid value for parameter temperature: must be >= 0"},
        {"FROM x\nPARAMETER temperature nan\n", "invalid value for parameter temperature"},
        {"FROM x\nPARAMETER temperature inf\n", "invalid value for parameter temperature"},
        {"FROM x\nPARAMETER num_ctx 4096.5\n", "line 2: invalid value for parameter num_ctx: expected an integer"},
        {"FROM x\nPARAMETER num_ctx 0\n", "must be between 1 and 2147483647"},
        {"FROM x\nPARAMETER num_ctx 99999999999\n", "invalid value for parameter num_ctx"},
        {"FROM x\nPARAMETER num_ctx 12abc\n", "expected an integer"},
        {"FROM x\nPARAMETER top_p 1.5\n", "must be between 0 and 1"},
        {"FROM x\nPARAMETER seed 1e3\n", "expected an integer"},
        {"FROM x\nPARAMETER stop \"\"\n", "empty stop string"},
        {"FROM x\nMESSAGE tool hi\n", "line 2: MESSAGE role must be one of"},
        {"FROM x\nMESSAGE\n", "line 2: MESSAGE role must be one of"},
        {"FROM x\nSYSTEM \"unterminated\n", "line 2: unterminated quoted value for SYSTEM"},
        {"FROM x\n\nTEMPLATE \"\"\"{{ .Prompt }}\nno end\n", "line 3: unterminated quoted value for TEMPLATE"},
        {"FROM x\nSYSTEM \"\n", "line 2: unterminated"},
    };
    for (const auto & c : cases) {
        const std::string err = parse_error(c.text);
        EXPECT_NE(err.find(c.error_part), std::string::npos) << "'" << c.text << "' gave: '" << err << "'";
    }
}

TEST(Modelfile, ErrorLineAndReason) {
    try {
        parse_modelfile("FROM x\nSYSTEM \"\"\"a\nb\nc\"\"\"\nPARAMETER top_k many\n");
        FAIL();
    } catch (const ModelfileError & e) {
        EXPECT_EQ(e.line(), 5); // counted past the multi-line value
        EXPECT_EQ(e.reason().find("line"), std::string::npos);
    }
}

TEST(Modelfile, StopAccumulates) {
    const auto mf = parse_modelfile("FROM x\nPARAMETER stop a\nPARAMETER stop \"b c\"\nPARAMETER stop \"\"\"\n\"\"\"\n");
    EXPECT_EQ(mf.params.stop, (std::vector<std::string>{"a", "b c", "\n"}));
}

TEST(Modelfile, QuoteRoundTrips) {
    const std::string values[] = {
        "plain",
        "two words",
        " leading space",
        "trailing space ",
        "\"starts with a quote",
        "ends with a quote\"",
        "multi\nline",
        "line ending with a quote\"\nnext",
        "\n",
        "",
        "# looks like a comment",
        "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}",
        "\"\"\" inner triple \"\"\"",
    };
    for (const auto & v : values) {
        std::string quoted;
        ASSERT_NO_THROW(quoted = quote_modelfile_value(v)) << v;
        const auto mf = parse_modelfile("FROM x\nSYSTEM " + quoted + "\n");
        EXPECT_EQ(mf.system, v) << "quoted as: " << quoted;
    }
    EXPECT_EQ(quote_modelfile_value("plain"), "plain");
    EXPECT_EQ(quote_modelfile_value(" x"), "\" x\"");
}

// Found by fuzz/modelfile: CR CR LF left "\r\n" in a quoted value, which format_modelfile
// cannot write back (it threw std::invalid_argument: /api/show failed for that model).
TEST(Modelfile, EveryCarriageReturnBeforeALineEndIsDropped) {
    const auto mf = parse_modelfile("from \"\r\r\n\"");
    ASSERT_EQ(mf.from.size(), 1u);
    EXPECT_EQ(mf.from[0], "\n");
    std::string text;
    ASSERT_NO_THROW(text = format_modelfile(mf));
    EXPECT_EQ(parse_modelfile(text), mf) << text;
    EXPECT_EQ(parse_modelfile("FROM x\r\r\nSYSTEM \"\"\"a\r\r\nb\"\"\"\r\n").system, "a\nb");
}

// Found by fuzz/modelfile: the first line of a quoted value lost its trailing blanks (later
// lines kept theirs), so `"\r\t` + LF gave a value holding "\r\n", which format_modelfile
// cannot write back (std::invalid_argument).
TEST(Modelfile, QuotedValueKeepsBlanksAtTheEndOfItsFirstLine) {
    for (const std::string value : {"\r\t\n", "\r \n"}) {
        const auto mf = parse_modelfile("from \"" + value + "\"");
        ASSERT_EQ(mf.from.size(), 1u);
        EXPECT_EQ(mf.from[0], value);
        std::string text;
        ASSERT_NO_THROW(text = format_modelfile(mf));
        EXPECT_EQ(parse_modelfile(text), mf) << text;
    }
    EXPECT_EQ(parse_modelfile("FROM x\nSYSTEM \"\"\"a  \nb\"\"\"  \n").system, "a  \nb");
    EXPECT_EQ(parse_modelfile("FROM x\nSYSTEM \"one line\"  \t\n").system, "one line");
}

TEST(Modelfile, FormatRoundTrips) {
    const auto mf = parse_modelfile(R"(FROM ./tiny.gguf
FROM ./proj.gguf
DRAFT ./draft.gguf
PARAMETER temperature 0.25
PARAMETER num_ctx 2048
PARAMETER stop "<|im_end|>"
PARAMETER stop "  padded"
SYSTEM """You are
terse."""
TEMPLATE {{ .Prompt }}
LICENSE """line
line"""
LICENSE Apache-2.0
MESSAGE system be brief
MESSAGE user "two
lines"
ADAPTER ./a.gguf
)");
    const std::string text = format_modelfile(mf);
    EXPECT_EQ(parse_modelfile(text), mf) << text;
}
