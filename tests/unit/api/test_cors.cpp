#include "api/cors.h"

#include <gtest/gtest.h>

using specd::api::CorsPolicy;
using specd::api::glob_match;

TEST(Cors, LocalOriginsAllowedByDefault) {
    CorsPolicy p("");
    EXPECT_TRUE(p.allows("http://localhost"));
    EXPECT_TRUE(p.allows("http://localhost:3000"));
    EXPECT_TRUE(p.allows("https://127.0.0.1:8443"));
    EXPECT_TRUE(p.allows("vscode-webview://abc"));
    EXPECT_FALSE(p.allows("https://evil.example"));
    EXPECT_FALSE(p.allows("http://localhost.evil.example"));
}

TEST(Cors, ConfiguredOriginsAreAdded) {
    CorsPolicy p("https://ui.example.com, https://*.corp.example");
    EXPECT_TRUE(p.allows("https://ui.example.com"));
    EXPECT_TRUE(p.allows("https://a.corp.example"));
    EXPECT_FALSE(p.allows("https://ui.example.com.evil"));
}

TEST(Cors, GlobMatch) {
    EXPECT_TRUE(glob_match("*", ""));
    EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
    EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
    EXPECT_TRUE(glob_match("abc", "abc"));
    EXPECT_FALSE(glob_match("abc", "abcd"));
    EXPECT_FALSE(glob_match(std::string(50, '*') + "x", std::string(5000, 'a')));
}

TEST(Cors, OllamaDefaultsIncludeVscodeFile) {
    CorsPolicy p("");
    EXPECT_TRUE(p.allows("vscode-file://vscode-app"));
    EXPECT_TRUE(p.allows("tauri://localhost"));
    EXPECT_TRUE(p.allows("http://0.0.0.0:8080"));
    EXPECT_FALSE(p.allows("null"));
}

TEST(Cors, StarAllowsEveryOrigin) {
    CorsPolicy p("*");
    EXPECT_TRUE(p.allows("https://evil.example"));
}

TEST(Cors, PreflightHeadersAddRequestedStainlessOnes) {
    CorsPolicy        p("");
    const std::string h = p.allowed_headers("Authorization, X-Stainless-OS,x-stainless-retry-count, x-other, x-stainless-");
    EXPECT_EQ(h, "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, OpenAI-Beta, x-stainless-os, "
                 "x-stainless-retry-count");
    EXPECT_EQ(p.allowed_headers(""), "Authorization, Content-Type, User-Agent, Accept, X-Requested-With, OpenAI-Beta");
}
