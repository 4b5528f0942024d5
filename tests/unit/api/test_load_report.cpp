#include "api/load_report.h"

#include <gtest/gtest.h>

using specd::api::load_metrics;
using specd::scheduler::LoadedInfo;

TEST(LoadReport, GaugesPerModelAndTheirSums) {
    LoadedInfo a, b;
    a.name = "tiny:latest", a.running = 2, a.queued = 3;
    b.name = "odd\"name\\x", b.running = 1, b.queued = 0;
    const std::string m = load_metrics({a, b});
    EXPECT_NE(m.find("# TYPE specd_model_running gauge\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_model_running{model=\"tiny:latest\"} 2\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_model_queued{model=\"tiny:latest\"} 3\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_model_running{model=\"odd\\\"name\\\\x\"} 1\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_running_sequences 3\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_queued_requests 3\n"), std::string::npos) << m;
}

TEST(LoadReport, NothingLoadedIsZero) {
    const std::string m = load_metrics({});
    EXPECT_NE(m.find("specd_running_sequences 0\n"), std::string::npos) << m;
    EXPECT_NE(m.find("specd_queued_requests 0\n"), std::string::npos) << m;
    EXPECT_EQ(m.find("model=\""), std::string::npos) << m;
}
