#include "api/access.h"

#include <gtest/gtest.h>

using namespace specd::api;

TEST(Access, LoopbackListenAddresses) {
    for (const char * h : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "LOCALHOST"}) EXPECT_TRUE(is_loopback(h)) << h;
    for (const char * h : {"0.0.0.0", "192.168.1.2", "example.com", "127.0.0.1.evil.com", "::"}) EXPECT_FALSE(is_loopback(h)) << h;
}

TEST(Access, HostHeadersOfALoopbackServer) {
    for (const char * h : {"localhost:11434", "127.0.0.1:11434", "127.0.0.1", "[::1]:11434", "[::1]", "app.localhost:3000",
                           "localhost:", ""}) {
        EXPECT_TRUE(host_header_allowed(h)) << h;
    }
    for (const char * h : {"evil.com", "evil.com:11434", "localhost.evil.com", "127.0.0.1.nip.io:11434", "[2001:db8::1]:80",
                           "10.0.0.1:11434",
                           // What follows the host must be a port, or a local name can carry any other.
                           "[::1]evil.com", "[::1]:11434evil.com", "[::1].evil.com", "localhost:evil.com",
                           "127.0.0.1:80:81", "::1", "[::1"}) {
        EXPECT_FALSE(host_header_allowed(h)) << h;
    }
}

TEST(Access, ApiKey) {
    EXPECT_TRUE(api_key_matches("Bearer s3cret", "s3cret"));
    EXPECT_FALSE(api_key_matches("Bearer s3cre", "s3cret"));
    EXPECT_FALSE(api_key_matches("Bearer s3creT", "s3cret"));
    EXPECT_FALSE(api_key_matches("s3cret", "s3cret"));
    EXPECT_FALSE(api_key_matches("Basic s3cret", "s3cret"));
    EXPECT_FALSE(api_key_matches("", "s3cret"));
    EXPECT_FALSE(api_key_matches("Bearer ", "")); // an empty key never matches
}
