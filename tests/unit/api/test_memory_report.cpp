#include "api/memory_report.h"

#include <gtest/gtest.h>

using specd::api::devices_json;
using specd::memory::Bucket;
using specd::memory::BucketBytes;
using specd::memory::DeviceBuckets;

// The host's line is what no other device holds; each worker's line is its own.
TEST(MemoryReport, DevicesListTheHostFirstThenEachDevice) {
    BucketBytes all{};
    all[static_cast<size_t>(Bucket::weights)]   = 100;
    all[static_cast<size_t>(Bucket::kv_target)] = 10;
    DeviceBuckets elsewhere;
    elsewhere["RPC0[127.0.0.1:50052]"][static_cast<size_t>(Bucket::weights)]   = 60;
    elsewhere["RPC0[127.0.0.1:50053]"][static_cast<size_t>(Bucket::weights)]   = 30;
    elsewhere["RPC0[127.0.0.1:50053]"][static_cast<size_t>(Bucket::kv_target)] = 4;

    const auto d = devices_json(all, elsewhere);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0]["name"], "CPU");
    EXPECT_EQ(d[0]["weights"], 10);
    EXPECT_EQ(d[0]["kv_target"], 6);
    EXPECT_EQ(d[0]["total"], 16);
    EXPECT_EQ(d[1]["name"], "RPC0[127.0.0.1:50052]");
    EXPECT_EQ(d[1]["total"], 60);
    EXPECT_EQ(d[2]["name"], "RPC0[127.0.0.1:50053]");
    EXPECT_EQ(d[2]["total"], 34);

    const auto host_only = devices_json(all, {});
    ASSERT_EQ(host_only.size(), 1u);
    EXPECT_EQ(host_only[0]["total"], 110);
}
