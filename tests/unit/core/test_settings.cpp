#include "core/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>

using specd::parse_host;

TEST(Settings, ParsesOllamaHostForms) {
    struct Case { const char * in; const char * host; int port; };
    const Case cases[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080}, {"0.0.0.0", "0.0.0.0", 11434}, {":9000", "127.0.0.1", 9000},
        {"http://localhost:1234", "localhost", 1234}, {"[::1]:5000", "::1", 5000}, {"example.com/", "example.com", 11434},
    };
    for (const auto & c : cases) {
        auto hp = parse_host(c.in);
        EXPECT_EQ(hp.host, c.host) << c.in;
        EXPECT_EQ(hp.port, c.port) << c.in;
    }
}

TEST(Settings, RejectsBadPorts) {
    EXPECT_THROW(parse_host("host:abc"), std::invalid_argument);
    EXPECT_THROW(parse_host("host:70000"), std::invalid_argument);
    EXPECT_THROW(parse_host("[::1"), std::invalid_argument);
}

TEST(Settings, SpecdWinsOverOllama) {
    setenv("OLLAMA_TESTKEY", "ollama", 1);
    EXPECT_EQ(specd::setting("TESTKEY").value_or(""), "ollama");
    setenv("SPECD_TESTKEY", "specd", 1);
    EXPECT_EQ(specd::setting("TESTKEY").value_or(""), "specd");
    unsetenv("SPECD_TESTKEY");
    unsetenv("OLLAMA_TESTKEY");
    EXPECT_FALSE(specd::setting("TESTKEY").has_value());
}

TEST(Settings, ParsesByteSizes) {
    struct Case { const char * in; uint64_t bytes; };
    const Case cases[] = {
        {"1048576", 1048576}, {"64M", 64ull << 20}, {"64m", 64ull << 20}, {"64MiB", 64ull << 20},
        {"64MB", 64ull << 20}, {"512k", 512ull << 10}, {"2G", 2ull << 30}, {"100b", 100},
    };
    for (const auto & c : cases) EXPECT_EQ(specd::parse_byte_size(c.in), c.bytes) << c.in;
}

TEST(Settings, RejectsBadByteSizes) {
    for (const char * in : {"", "0", "M", "-5", "1.5M", "64T", "64 M", "64Mx", "9999999999999999999999", "9000000000G"}) {
        EXPECT_THROW(specd::parse_byte_size(in), std::invalid_argument) << in;
    }
}
