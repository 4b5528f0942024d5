// Long contents rendered through stand-ins come out as the template would have written them.
#include "engine/chat_template.h"
#include "engine/content_stand_ins.h"

#include <gtest/gtest.h>

using specd::Message;
using specd::engine::ChatTemplate;
using specd::engine::ContentStandIns;

namespace {

// Distinct text of `n` bytes, with a recognisable start and end.
std::string long_text(size_t n, const std::string & start = "Begin ", const std::string & end = " end.") {
    std::string s = start;
    for (size_t i = 0; s.size() + end.size() < n; ++i) s += "word" + std::to_string(i % 997) + ' ';
    s.resize(n - end.size());
    return s + end;
}

const std::string k_chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

} // namespace

TEST(ContentStandIns, ShortContentsAndAssistantTurnsAreLeftAlone) {
    const std::vector<Message> messages{{"user", "hi"}, {"assistant", long_text(100000)}};
    const ContentStandIns      stand_ins(messages);
    EXPECT_TRUE(stand_ins.empty());
}

TEST(ContentStandIns, RestoreNeedsEachStandInExactlyOnce) {
    const std::string    content = long_text(100000);
    const ContentStandIns stand_ins({{"user", content}});
    ASSERT_FALSE(stand_ins.empty());
    const std::string & stand_in = stand_ins.messages()[0].content;
    EXPECT_LT(stand_in.size(), 1000u);
    EXPECT_EQ(stand_ins.restore("[" + stand_in + "]"), "[" + content + "]");
    EXPECT_EQ(stand_ins.restore(stand_in + stand_in), std::nullopt);
    EXPECT_EQ(stand_ins.restore("nothing"), std::nullopt);
}

TEST(ContentStandIns, AContentHoldingTheMarkerDisablesThem) {
    const ContentStandIns stand_ins({{"user", long_text(100000)}, {"user", "\x1f\x1especd-stand-in-0"}});
    EXPECT_TRUE(stand_ins.empty());
}

TEST(ContentStandIns, TemplateRendersTheRealContents) {
    const ChatTemplate   tmpl(k_chatml);
    const std::string    a = long_text(200000), b = long_text(70000, "Second ", " fin.");
    std::vector<Message> messages{{"system", "Be brief."}, {"user", a}, {"assistant", "ok"}, {"user", b}};
    EXPECT_EQ(tmpl.render(messages, true), "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n" + a +
                                               "<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n<|im_start|>user\n" +
                                               b + "<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ContentStandIns, TemplatesThatChangeOrTestTheContentSeeTheRealOne) {
    const std::string content = long_text(100000, "<tool_response>", "</tool_response>");
    // A filter rewrites the text: the stand-in does not survive, the real contents render.
    const ChatTemplate upper("{% for m in messages %}{{ m.content | upper }}{% endfor %}");
    std::string        expected = content;
    for (auto & c : expected) c = char(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(upper.render({{"user", content}}, false), expected);
    // Tests of either end see the content's own ends.
    const ChatTemplate ends("{% for m in messages %}{% if m.content.startswith('<tool_response>') and "
                            "m.content.endswith('</tool_response>') %}T:{% endif %}{{ m.content }}{% endfor %}");
    EXPECT_EQ(ends.render({{"user", content}}, false), "T:" + content);
    // Written twice: the real contents, twice.
    const ChatTemplate twice("{% for m in messages %}{{ m.content }}|{{ m.content }}{% endfor %}");
    EXPECT_EQ(twice.render({{"user", content}}, false), content + "|" + content);
}
