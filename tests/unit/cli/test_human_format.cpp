#include "cli/human_format.h"

#include <gtest/gtest.h>

using namespace specd::cli;
using namespace std::chrono;

TEST(HumanFormat, Bytes) {
    EXPECT_EQ(human_bytes(0), "0 B");
    EXPECT_EQ(human_bytes(999), "999 B");
    EXPECT_EQ(human_bytes(1000), "1 KB");
    EXPECT_EQ(human_bytes(1500), "1.5 KB");
    EXPECT_EQ(human_bytes(12'345'678), "12 MB");
    EXPECT_EQ(human_bytes(4'700'000'000ull), "4.7 GB");
    EXPECT_EQ(human_bytes(274'000'000), "274 MB");
}

TEST(HumanFormat, Durations) {
    EXPECT_EQ(human_duration(seconds(0)), "Less than a second");
    EXPECT_EQ(human_duration(seconds(1)), "1 second");
    EXPECT_EQ(human_duration(seconds(42)), "42 seconds");
    EXPECT_EQ(human_duration(seconds(61)), "About a minute");
    EXPECT_EQ(human_duration(minutes(4) + seconds(59)), "4 minutes");
    EXPECT_EQ(human_duration(minutes(59) + seconds(59)), "59 minutes");
    EXPECT_EQ(human_duration(minutes(70)), "About an hour");
    EXPECT_EQ(human_duration(hours(30)), "30 hours");
    EXPECT_EQ(human_duration(hours(24 * 5)), "5 days");
    EXPECT_EQ(human_duration(hours(24 * 21)), "3 weeks");
    EXPECT_EQ(human_duration(hours(24 * 90)), "3 months");
    EXPECT_EQ(human_duration(hours(24 * 365 * 3)), "3 years");
}

TEST(HumanFormat, TimesRelativeToNow) {
    const auto now = Clock::now();
    EXPECT_EQ(human_time(now - minutes(3) - seconds(5), now), "3 minutes ago");
    EXPECT_EQ(human_time(now + minutes(4) + seconds(30), now), "4 minutes from now");
    EXPECT_EQ(human_time(now + hours(24 * 365 * 100), now), "Forever");
    EXPECT_EQ(human_time(now, now), "Less than a second ago");
}

TEST(HumanFormat, ParsesTheApisTimes) {
    const auto t = parse_rfc3339("2024-05-01T12:00:00.5Z");
    ASSERT_TRUE(t);
    EXPECT_EQ(duration_cast<milliseconds>(t->time_since_epoch()).count(), 1714564800500);
    const auto nanos = parse_rfc3339("2024-05-01T12:00:00.123456789Z");
    ASSERT_TRUE(nanos);
    EXPECT_EQ(duration_cast<nanoseconds>(nanos->time_since_epoch()).count() % 1000000000, 123456789);
    // An offset east of UTC is earlier in UTC.
    const auto east = parse_rfc3339("2024-05-01T14:00:00+02:00");
    ASSERT_TRUE(east);
    EXPECT_EQ(*east, Clock::from_time_t(1714564800));
    // The server's "never expires" time parses and is far ahead.
    const auto never = parse_rfc3339("2318-01-01T00:00:00Z");
    ASSERT_TRUE(never);
    EXPECT_EQ(*never, Clock::time_point::max()); // past the clock's range, not wrapped around
    EXPECT_EQ(human_time(*never, Clock::now()), "Forever");
    const auto last = parse_rfc3339("2262-01-01T00:00:00Z");
    ASSERT_TRUE(last);
    EXPECT_EQ(duration_cast<seconds>(last->time_since_epoch()).count(), 9214646400);
    EXPECT_EQ(parse_rfc3339("1600-01-01T00:00:00Z"), Clock::time_point::min());
    for (const char * bad : {"", "yesterday", "2024-05-01", "2024-05-01T12:00:00", "2024-05-01T12:00:00+2"}) {
        EXPECT_FALSE(parse_rfc3339(bad)) << bad;
    }
}

TEST(HumanFormat, Nanoseconds) {
    EXPECT_EQ(human_nanoseconds(1'234'000'000), "1.234s");
    EXPECT_EQ(human_nanoseconds(20'100'000), "20.100ms");
    EXPECT_EQ(human_nanoseconds(812'000), "812.000µs");
    EXPECT_EQ(human_nanoseconds(12), "12ns");
}
