// The HTTP layer's limits, driven over a raw socket against an in-process server with an
// empty model store (no model is loaded): body size by Content-Length, by chunks and before
// `Expect: 100-continue`; header count and size; URI length; malformed framing. Each refusal
// is a 4xx with a JSON error naming the limit, and the server answers normally afterwards.
#include "api/server.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t k_limit = 4096;

int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len        = sizeof addr;
    if (bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(addr.sin_port);
}

struct Reply {
    int            status = 0;
    std::string    head;
    nlohmann::json body; // null when the body is not JSON
};

// Sends `request` as is and reads until the server closes the connection (every request
// here says "Connection: close"; error answers close it anyway).
Reply round_trip(int port, const std::string & request) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Reply r;
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        close(fd);
        return r;
    }
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (size_t sent = 0; sent < request.size();) {
        const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break; // the server may answer (and close) before it has read everything
        sent += static_cast<size_t>(n);
    }
    // Reads one answer: its head, then Content-Length bytes (a refusal that closes the
    // connection lingers a moment for unread input before it closes).
    std::string text;
    char        buf[4096];
    size_t      want = std::string::npos;
    for (ssize_t n; text.size() < want && (n = recv(fd, buf, sizeof buf, 0)) > 0;) {
        text.append(buf, static_cast<size_t>(n));
        const size_t end = text.find("\r\n\r\n");
        if (want == std::string::npos && end != std::string::npos) {
            const size_t cl = text.find("Content-Length: ");
            want = end + 4 + (cl < end ? std::stoul(text.substr(cl + 16)) : 0);
        }
    }
    close(fd);
    const size_t end = text.find("\r\n\r\n");
    if (text.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
    r.status = std::stoi(text.substr(9, 3));
    r.head   = text.substr(0, end);
    r.body   = nlohmann::json::parse(text.substr(end + 4, want - end - 4), nullptr, false);
    return r;
}

class ServerLimits : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::filesystem::temp_directory_path() / ("specd-limits-" + std::to_string(getpid()));
        specd::api::ServerConfig cfg;
        cfg.port            = free_port();
        cfg.limits.max_body = k_limit;
        port_               = cfg.port;
        store_              = new specd::models::Store(dir_);
        scheduler_          = new specd::scheduler::Scheduler({}, nullptr);
        server_             = new specd::api::Server(cfg, {*store_, *scheduler_, [] { return specd::memory::PromptCacheStats{}; }});
        server_->bind();
        thread_ = new std::thread([] { server_->listen(); });
        for (int i = 0; i < 200 && round_trip(port_, get("/api/version")).status != 200; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    static void TearDownTestSuite() {
        server_->stop();
        thread_->join();
        delete thread_;
        delete server_;
        delete scheduler_;
        delete store_;
        std::filesystem::remove_all(dir_);
    }

    static std::string get(const std::string & target, const std::string & extra_headers = "") {
        return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers + "\r\n";
    }

    static std::string post(const std::string & target, const std::string & body) {
        return "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }

    static std::string post_chunked(const std::string & target, const std::vector<std::string> & chunks) {
        std::string req = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        for (const auto & c : chunks) {
            char size[32];
            std::snprintf(size, sizeof size, "%zx\r\n", c.size());
            req += size + c + "\r\n";
        }
        return req + "0\r\n\r\n";
    }

    // The error string of a JSON error answer ("" when the answer is not one).
    static std::string error_of(const Reply & r) {
        return r.body.is_object() && r.body.contains("error") && r.body["error"].is_string() ? r.body["error"].get<std::string>() : "";
    }

    // The server still parses and answers a normal JSON request.
    static void expect_healthy() {
        const Reply r = round_trip(port_, post("/api/show", R"({"model":"no-such-model"})"));
        EXPECT_EQ(r.status, 404);
        EXPECT_NE(error_of(r).find("not found"), std::string::npos) << r.head;
    }

    static inline std::filesystem::path     dir_;
    static inline int                       port_   = 0;
    static inline specd::models::Store *        store_     = nullptr;
    static inline specd::scheduler::Scheduler * scheduler_ = nullptr;
    static inline specd::api::Server *          server_    = nullptr;
    static inline std::thread *             thread_ = nullptr;
};

TEST_F(ServerLimits, BodyAtTheLimitIsRead) {
    std::string body = R"({"model":"../escape"})";
    body += std::string(k_limit - body.size(), ' ');
    const Reply r = round_trip(port_, post("/api/show", body));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(error_of(r).find("invalid model name"), std::string::npos) << error_of(r);
    expect_healthy();
}

TEST_F(ServerLimits, ContentLengthOverTheLimitIs413) {
    const Reply r = round_trip(port_, post("/api/show", std::string(k_limit + 1, ' ')));
    EXPECT_EQ(r.status, 413);
    EXPECT_NE(error_of(r).find("larger than 4096 bytes"), std::string::npos) << error_of(r);
    expect_healthy();
}

TEST_F(ServerLimits, ChunkedBodyIsCountedAsItArrives) {
    const Reply ok = round_trip(port_, post_chunked("/api/show", {R"({"model":)", R"("../escape"})"}));
    EXPECT_EQ(ok.status, 400);
    EXPECT_NE(error_of(ok).find("invalid model name"), std::string::npos) << error_of(ok);

    const Reply big = round_trip(port_, post_chunked("/api/generate", {std::string(3000, ' '), std::string(3000, ' ')}));
    EXPECT_EQ(big.status, 413);
    EXPECT_NE(error_of(big).find("larger than 4096 bytes"), std::string::npos) << error_of(big);
    expect_healthy();
}

TEST_F(ServerLimits, OversizedBodyIsRefusedBeforeContinue) {
    const Reply r = round_trip(port_, "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                    "Content-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n");
    EXPECT_EQ(r.status, 413) << r.head;
    EXPECT_NE(error_of(r).find("larger than"), std::string::npos);
    expect_healthy();
}

// A body within the limit is asked for with "100 Continue" and then read.
TEST_F(ServerLimits, AcceptableBodyGetsContinue) {
    const std::string body = R"({"model":"../escape"})";
    const int         fd   = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in       addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string head = "POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nExpect: 100-continue\r\n"
                             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
    char          buf[4096];
    std::string   text;
    for (ssize_t n; text.find("\r\n\r\n") == std::string::npos && (n = recv(fd, buf, sizeof buf, 0)) > 0;) text.append(buf, n);
    EXPECT_EQ(text, "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_EQ(send(fd, body.data(), body.size(), MSG_NOSIGNAL), static_cast<ssize_t>(body.size()));
    text.clear();
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) text.append(buf, n);
    close(fd);
    EXPECT_EQ(text.rfind("HTTP/1.1 400 ", 0), 0u) << text;
    EXPECT_NE(text.find("invalid model name"), std::string::npos) << text;
}

TEST_F(ServerLimits, ChunkedBodyOnAGetRouteIs411) {
    const Reply r = round_trip(port_, get("/api/tags", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n0\r\n\r\n");
    EXPECT_EQ(r.status, 411);
    EXPECT_NE(error_of(r).find("chunked"), std::string::npos) << error_of(r);
    expect_healthy();
}

TEST_F(ServerLimits, TooManyHeadersIs400WithJson) {
    std::string headers;
    for (int i = 0; i < 150; ++i) headers += "X-Filler-" + std::to_string(i) + ": x\r\n";
    const Reply r = round_trip(port_, get("/api/version", headers));
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(error_of(r).find("invalid request headers (at most 100 header fields"), std::string::npos) << error_of(r);
    expect_healthy();
}

TEST_F(ServerLimits, HeaderLineOverTheLimitIs400WithJson) {
    for (size_t size : {9000, 40000}) {
        const Reply r = round_trip(port_, get("/api/version", "X-Big: " + std::string(size, 'a') + "\r\n"));
        EXPECT_EQ(r.status, 400) << size;
        EXPECT_NE(error_of(r).find("8192 bytes"), std::string::npos) << error_of(r);
    }
    expect_healthy();
}

// A target up to 32 KiB is routed; a longer one is a 414, a head over 64 KiB a 431.
TEST_F(ServerLimits, LongUris) {
    const Reply routed = round_trip(port_, get("/api/" + std::string(30000, 'a')));
    EXPECT_EQ(routed.status, 404);
    EXPECT_EQ(error_of(routed), "not found");
    const Reply too_long = round_trip(port_, get("/api/" + std::string(40000, 'a')));
    EXPECT_EQ(too_long.status, 414) << too_long.head;
    EXPECT_NE(error_of(too_long).find("longer than 32768 bytes"), std::string::npos) << error_of(too_long);
    const Reply huge = round_trip(port_, get("/api/" + std::string(70000, 'a')));
    EXPECT_EQ(huge.status, 431) << huge.head;
    EXPECT_NE(error_of(huge).find("larger than 65536 bytes"), std::string::npos) << error_of(huge);
    expect_healthy();
}

// What the parser refuses: a bad or conflicting Content-Length, a Transfer-Encoding beside
// a Content-Length (request smuggling), two Host fields.
TEST_F(ServerLimits, MalformedFramingIs400WithJson) {
    const std::string head = "POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"Content-Length: -1\r\n\r\n", "Content-Length"},
        {"Content-Length: 12abc\r\n\r\n", "Content-Length"},
        {"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "Content-Length"},
        {"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Transfer-Encoding"},
        {"Host: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", "more than one Host"},
    };
    for (const auto & [rest, phrase] : cases) {
        const Reply r = round_trip(port_, head + rest);
        EXPECT_EQ(r.status, 400) << rest;
        EXPECT_NE(error_of(r).find(phrase), std::string::npos) << rest << ": " << error_of(r);
    }
    expect_healthy();
}

TEST_F(ServerLimits, OtherErrorsKeepTheirOwnMessage) {
    // After a refused request on some thread, an unknown path is still plainly "not found".
    for (int i = 0; i < 4; ++i) round_trip(port_, get("/api/tags", "X-Big: " + std::string(9000, 'a') + "\r\n"));
    const Reply r = round_trip(port_, get("/api/nowhere"));
    EXPECT_EQ(r.status, 404);
    EXPECT_EQ(error_of(r), "not found");
}

} // namespace
