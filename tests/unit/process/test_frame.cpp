#include "process/frame.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

using specd::process::Frame;
using specd::process::read_frame;
using specd::process::write_frame;

namespace {

// Both ends of a socket pair, closed at the end of the test unless closed before.
struct Pair {
    int fd[2] = {-1, -1};
    Pair() {
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) throw std::runtime_error("socketpair failed");
    }
    ~Pair() {
        close_end(0);
        close_end(1);
    }
    void close_end(int i) {
        if (fd[i] >= 0) ::close(fd[i]);
        fd[i] = -1;
    }
};

void put_raw(int fd, const std::string & bytes) {
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
}

std::string read_all(int fd) {
    std::string out;
    char        buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

std::string le32(uint32_t v) {
    std::string s;
    for (int i = 0; i < 4; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
    return s;
}

std::string le64(uint64_t v) {
    std::string s;
    for (int i = 0; i < 8; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
    return s;
}

// What read_frame says about `bytes` followed by the end of the stream.
std::string read_error(const std::string & bytes) {
    Pair p;
    put_raw(p.fd[1], bytes);
    p.close_end(1);
    try {
        read_frame(p.fd[0]);
    } catch (const std::runtime_error & e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST(Frame, RoundTripWithBlobs) {
    std::string big(300'000, '\0'); // more than a socket buffer holds, and past the coalescing size
    for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7 + 3);
    const std::vector<Frame> sent = {
        {{{"kind", "text"}, {"n", 3}, {"text", "h\u00e9llo"}}, {"abc", "", std::string("\0\xff\x01", 3), big}},
        {{{"kind", "done"}}, {}},
        {nullptr, {}},
        {nlohmann::json::array({1, 2.5, "x"}), {std::string(5, '\0')}},
    };

    Pair        p;
    std::thread writer([&] {
        for (const Frame & f : sent) write_frame(p.fd[1], f);
        p.close_end(1);
    });
    std::vector<Frame> got;
    while (auto f = read_frame(p.fd[0])) got.push_back(std::move(*f));
    writer.join();

    ASSERT_EQ(got.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(got[i].head, sent[i].head) << "frame " << i;
        EXPECT_EQ(got[i].blobs, sent[i].blobs) << "frame " << i;
    }
}

TEST(Frame, BytesOnTheWireAreLittleEndian) {
    Pair p;
    write_frame(p.fd[1], {{{"a", 1}}, {"xy", ""}});
    p.close_end(1);
    const std::string expected = le32(7) + R"({"a":1})" + le32(2) + le64(2) + "xy" + le64(0);
    EXPECT_EQ(read_all(p.fd[0]), expected);
}

TEST(Frame, EndOfStreamAtABoundaryIsNullopt) {
    Pair p;
    p.close_end(1);
    EXPECT_FALSE(read_frame(p.fd[0]).has_value());

    Pair q;
    write_frame(q.fd[1], {{{"last", true}}, {}});
    q.close_end(1);
    auto f = read_frame(q.fd[0]);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->head, nlohmann::json({{"last", true}}));
    EXPECT_FALSE(read_frame(q.fd[0]).has_value());
}

TEST(Frame, EndOfStreamInsideAFrameThrows) {
    Pair p;
    write_frame(p.fd[1], {{{"k", "v"}}, {"blob bytes"}});
    p.close_end(1);
    const std::string whole = read_all(p.fd[0]);
    ASSERT_GT(whole.size(), 8u);

    // Cut everywhere: inside the head length, the head, the count, a blob's length, a blob.
    for (size_t n = 1; n < whole.size(); ++n) {
        const std::string error = read_error(whole.substr(0, n));
        EXPECT_NE(error.find("ended inside a frame"), std::string::npos) << "cut at " << n << ": " << error;
    }
    EXPECT_EQ(read_error(whole), "(no error)");
}

TEST(Frame, LimitsAreRefused) {
    // A head length over 64 MiB is refused before anything is allocated or read.
    EXPECT_NE(read_error(le32((64u << 20) + 1)).find("over the limit"), std::string::npos);
    EXPECT_NE(read_error(le32(0xffffffffu)).find("over the limit"), std::string::npos);

    const std::string head = le32(2) + "{}";
    EXPECT_NE(read_error(head + le32(4097)).find("4097 blobs"), std::string::npos);
    EXPECT_NE(read_error(head + le32(1) + le64((uint64_t(4) << 30) + 1)).find("over the limit"), std::string::npos);
    // At the limits themselves, the frame is only short.
    EXPECT_NE(read_error(head + le32(4096)).find("ended inside a frame"), std::string::npos);
    EXPECT_NE(read_error(head + le32(1) + le64(uint64_t(4) << 30)).find("ended inside a frame"), std::string::npos);
}

TEST(Frame, HeadThatIsNotJsonThrows) {
    EXPECT_NE(read_error(le32(3) + "abc" + le32(0)).find("not JSON"), std::string::npos);
    EXPECT_NE(read_error(le32(0) + le32(0)).find("not JSON"), std::string::npos);
}

TEST(Frame, WriterRefusesWhatTheReaderWould) {
    Pair  p;
    Frame many{{}, std::vector<std::string>(4097)};
    EXPECT_THROW(write_frame(p.fd[1], many), std::runtime_error);
    // Text that is not UTF-8 cannot be JSON text.
    EXPECT_THROW(write_frame(p.fd[1], {{{"text", std::string("\xff\xfe")}}, {}}), std::runtime_error);
    // Neither wrote a byte: the stream still begins at a frame.
    write_frame(p.fd[1], {{{"ok", 1}}, {}});
    p.close_end(1);
    auto f = read_frame(p.fd[0]);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->head, nlohmann::json({{"ok", 1}}));
}

TEST(Frame, DeadPeerIsAnErrorNotASignal) {
    Pair p;
    p.close_end(0);
    try {
        write_frame(p.fd[1], {{{"to", "nobody"}}, {std::string(100'000, 'x')}});
        FAIL() << "write_frame to a closed peer succeeded";
    } catch (const std::system_error & e) {
        EXPECT_EQ(e.code().value(), EPIPE) << e.what();
    }
}

TEST(Frame, WorksOverAPipe) {
    int fd[2];
    ASSERT_EQ(::pipe(fd), 0);
    write_frame(fd[1], {{{"over", "pipe"}}, {"\x01\x02"}});
    ::close(fd[1]);
    auto f = read_frame(fd[0]);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->head, nlohmann::json({{"over", "pipe"}}));
    EXPECT_EQ(f->blobs, std::vector<std::string>{"\x01\x02"});
    EXPECT_FALSE(read_frame(fd[0]).has_value());
    ::close(fd[0]);
}
