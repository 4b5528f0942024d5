#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using specd::metrics::ServerMetrics;

namespace {

// The value of one series in an exposition ("name{labels} value" or "name value").
std::string series(const std::string & text, const std::string & name) {
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return "";
    const size_t from = at + name.size() + 2;
    return text.substr(from, text.find('\n', from) - from);
}

} // namespace

// A runner process's metrics reach the server as samples; the server adds what grew since the
// previous sample of that runner, so nothing is counted twice and nothing is lost.
TEST(ServerMetrics, AddsTheDifferenceBetweenTwoSamplesOfAnother) {
    ServerMetrics runner, server;
    server.requests_total.add(5); // the server's own

    runner.requests_total.add(2);
    runner.generated_tokens_total.add(100);
    runner.spec_depth.observe(3, 4);
    runner.batch_requests.observe(2);
    const std::vector<double> first = runner.sample();
    server.add_difference(first, {});

    runner.requests_total.add(1);
    runner.model_loads_total.add(1);
    runner.spec_depth.observe(8);
    const std::vector<double> second = runner.sample();
    server.add_difference(second, first);
    server.add_difference(second, second); // no growth: nothing added

    EXPECT_EQ(server.requests_total.value(), 8);
    EXPECT_EQ(server.generated_tokens_total.value(), 100);
    EXPECT_EQ(server.model_loads_total.value(), 1);
    const std::string text = server.exposition();
    EXPECT_EQ(series(text, "specd_spec_depth_count"), "5");
    EXPECT_EQ(series(text, "specd_spec_depth_sum"), "20");
    EXPECT_EQ(series(text, "specd_spec_depth_bucket{le=\"3\"}"), "4");
    EXPECT_EQ(series(text, "specd_spec_depth_bucket{le=\"+Inf\"}"), "5");
    EXPECT_EQ(series(text, "specd_batch_requests_count"), "1");
}

TEST(ServerMetrics, IgnoresASampleOfAnotherShape) {
    ServerMetrics server;
    server.add_difference({1.0, 2.0}, {});
    EXPECT_EQ(server.requests_total.value(), 0);
    EXPECT_EQ(server.sample(), ServerMetrics().sample());
}
