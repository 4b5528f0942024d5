#include "core/rpc_endpoints.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using specd::is_loopback_host;
using specd::parse_rpc_endpoints;
using specd::RpcEndpoint;

TEST(RpcEndpoints, ReadsAListOfLoopbackWorkers) {
    const auto got = parse_rpc_endpoints(" 127.0.0.1:50052, localhost:1,127.1.2.3:65535 ", false);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0], (RpcEndpoint{"127.0.0.1", 50052}));
    EXPECT_EQ(got[1], (RpcEndpoint{"localhost", 1}));
    EXPECT_EQ(got[2], (RpcEndpoint{"127.1.2.3", 65535}));
    EXPECT_EQ(got[0].text(), "127.0.0.1:50052");
}

TEST(RpcEndpoints, RefusesBadForms) {
    for (const std::string bad : {"", "127.0.0.1", "127.0.0.1:", ":50052", "127.0.0.1:0", "127.0.0.1:65536",
                                  "127.0.0.1:5x", "127.0.0.1:50052,", "[::1]:50052", "a b:1", "127.0.0.1:1,127.0.0.1:1"}) {
        EXPECT_THROW(parse_rpc_endpoints(bad, true), std::invalid_argument) << bad;
    }
}

// The RPC protocol has no authentication: a worker elsewhere needs the user's word.
TEST(RpcEndpoints, RemoteWorkersNeedPermission) {
    for (const std::string remote : {"10.0.0.2:50052", "192.168.1.5:1", "gpu-box:50052", "128.0.0.1:1", "127.0.0.256:1"}) {
        EXPECT_THROW(parse_rpc_endpoints(remote, false), std::invalid_argument) << remote;
    }
    try {
        parse_rpc_endpoints("10.0.0.2:50052", false);
    } catch (const std::invalid_argument & e) {
        EXPECT_NE(std::string(e.what()).find("SPECD_RPC_ALLOW_REMOTE=1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(parse_rpc_endpoints("10.0.0.2:50052,gpu-box:7", true).size(), 2u);
}

TEST(RpcEndpoints, LoopbackIsLocalhostOr127Slash8) {
    EXPECT_TRUE(is_loopback_host("127.0.0.1"));
    EXPECT_TRUE(is_loopback_host("127.255.255.254"));
    EXPECT_TRUE(is_loopback_host("localhost"));
    EXPECT_FALSE(is_loopback_host("127.0.0"));
    EXPECT_FALSE(is_loopback_host("127.0.0.1.5"));
    EXPECT_FALSE(is_loopback_host("127.0.0.1000"));
    EXPECT_FALSE(is_loopback_host("0.0.0.0"));
    EXPECT_FALSE(is_loopback_host("localhost.example.com"));
}

TEST(RpcEndpoints, AtMostSixteen) {
    std::string list;
    for (int i = 0; i < 17; ++i) list += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(50000 + i);
    EXPECT_THROW(parse_rpc_endpoints(list, false), std::invalid_argument);
}
