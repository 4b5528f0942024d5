#include "http/head_check.h"
#include "http/limits.h"

#include <gtest/gtest.h>

using namespace specd::http;

namespace {

Request head_with(std::vector<std::pair<std::string, std::string>> fields, std::string target = "/api/tags") {
    Request r;
    r.method = "GET";
    r.target = std::move(target);
    for (auto & [n, v] : fields) r.headers.add(n, v);
    return r;
}

} // namespace

TEST(HeadCheck, TableOfHeads) {
    struct Case {
        Request head;
        int     status; // 0: accepted
        const char * phrase;
    };
    std::vector<std::pair<std::string, std::string>> many;
    for (int i = 0; i < 101; ++i) many.emplace_back("X-" + std::to_string(i), "x");
    const Case cases[] = {
        {head_with({{"Host", "localhost"}}), 0, ""},
        {head_with({{"Host", "localhost"}, {"host", "evil.example"}}), 400, "more than one Host"},
        {head_with(many), 400, "at most 100 header fields"},
        {head_with({{"X-Big", std::string(8190, 'a')}}), 400, "8192 bytes"},
        {head_with({{"X-Big", std::string(8180, 'a')}}), 0, ""},
        {head_with({}, "/" + std::string(Limits::k_max_target, 'a')), 414, "longer than 32768 bytes"},
        {head_with({}, "/" + std::string(Limits::k_max_target - 1, 'a')), 0, ""},
    };
    for (const auto & c : cases) {
        const auto r = check_head(c.head);
        if (c.status == 0) {
            EXPECT_FALSE(r) << r->message;
            continue;
        }
        ASSERT_TRUE(r) << c.phrase;
        EXPECT_EQ(r->status, c.status);
        EXPECT_NE(r->message.find(c.phrase), std::string::npos) << r->message;
    }
}

TEST(HeadCheck, DecodePath) {
    EXPECT_EQ(decode_path("/v1/models/tiny%3Alatest"), "/v1/models/tiny:latest");
    EXPECT_EQ(decode_path("/a%2Fb"), "/a/b");
    EXPECT_EQ(decode_path("/bad%zz%4"), "/bad%zz%4"); // malformed escapes stay
    EXPECT_EQ(decode_path("/plain"), "/plain");
}

TEST(Limits, ParseDuration) {
    EXPECT_EQ(parse_duration("10"), std::chrono::seconds(10));
    EXPECT_EQ(parse_duration("2s"), std::chrono::seconds(2));
    EXPECT_EQ(parse_duration("500ms"), Millis(500));
    EXPECT_EQ(parse_duration("1m"), std::chrono::minutes(1));
    for (const char * bad : {"", "s", "-1s", "1h", "1.5s", "10 s"}) EXPECT_THROW(parse_duration(bad), std::invalid_argument) << bad;
}
