#include "process/text_batcher.h"

#include <gtest/gtest.h>

using specd::process::TextBatcher;
using specd::scheduler::Event;

namespace {

Event text(std::string t, int logprob_tokens = 0) {
    Event e;
    e.text = std::move(t);
    for (int i = 0; i < logprob_tokens; ++i) e.logprobs.push_back({});
    return e;
}

Event done() {
    Event e;
    e.kind = Event::Kind::done;
    return e;
}

} // namespace

// A streaming client gets each piece as it comes.
TEST(TextBatcher, StreamedTextGoesOutPieceByPiece) {
    TextBatcher b(true);
    EXPECT_EQ(b.take(text("a")).size(), 1u);
    EXPECT_EQ(b.take(text("b")).size(), 1u);
    const auto end = b.take(done());
    ASSERT_EQ(end.size(), 1u);
    EXPECT_EQ(end[0].kind, Event::Kind::done);
}

// A client that reads the whole answer gets its text in one piece, logprobs in order, right
// before the end.
TEST(TextBatcher, UnstreamedTextGoesOutOnceBeforeTheEnd) {
    TextBatcher b(false);
    EXPECT_TRUE(b.take(text("Hel", 1)).empty());
    EXPECT_TRUE(b.take(text("lo", 2)).empty());
    EXPECT_TRUE(b.take(text(" you", 1)).empty());
    const auto end = b.take(done());
    ASSERT_EQ(end.size(), 2u);
    EXPECT_EQ(end[0].kind, Event::Kind::text);
    EXPECT_EQ(end[0].text, "Hello you");
    EXPECT_EQ(end[0].logprobs.size(), 4u);
    EXPECT_EQ(end[1].kind, Event::Kind::done);
}

// An error ends the answer too: the text before it is not lost, and an answer without text
// sends the end alone.
TEST(TextBatcher, AnErrorFlushesTheTextFirst) {
    TextBatcher b(false);
    b.take(text("partial"));
    Event err;
    err.kind = Event::Kind::error;
    err.text = "runner stopped";
    const auto end = b.take(err);
    ASSERT_EQ(end.size(), 2u);
    EXPECT_EQ(end[0].text, "partial");
    EXPECT_EQ(end[1].kind, Event::Kind::error);

    TextBatcher empty(false);
    EXPECT_EQ(empty.take(done()).size(), 1u);
}
