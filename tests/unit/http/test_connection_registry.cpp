#include "http/connection_registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using namespace specd::http;

namespace {

struct FakeConnection : Tracked {
    FakeConnection(ConnectionRegistry & r, std::string c, int age_ms, bool waiting) :
        registry(r), addr(std::move(c)), since(Clock::time_point() + std::chrono::milliseconds(age_ms)), waiting(waiting) {}
    const std::string & client() const override { return addr; }
    bool                awaiting_head() const override { return waiting && !closed; }
    Clock::time_point   waiting_since() const override { return since; }
    void                close() override {
        closed = true;
        registry.remove(this);
    }
    ConnectionRegistry & registry;
    std::string          addr;
    Clock::time_point    since;
    bool                 waiting;
    bool                 closed = false;
};

struct Fixture {
    ConnectionRegistry                           registry;
    std::vector<std::unique_ptr<FakeConnection>> conns;
    Fixture(size_t total, size_t per_client) : registry(total, per_client) {}
    // Adds a connection if make_room allows it; returns whether it did.
    bool add(const std::string & client, int since_ms, bool waiting) {
        if (!registry.make_room(client)) return false;
        conns.push_back(std::make_unique<FakeConnection>(registry, client, since_ms, waiting));
        registry.add(conns.back().get());
        return true;
    }
    std::vector<bool> closed() const {
        std::vector<bool> out;
        for (const auto & c : conns) out.push_back(c->closed);
        return out;
    }
};

} // namespace

TEST(ConnectionRegistry, PerClientCapClosesThatClientsLongestWaiting) {
    Fixture f(100, 3);
    EXPECT_TRUE(f.add("a", 30, true));
    EXPECT_TRUE(f.add("a", 10, true)); // waiting longest (since 10)
    EXPECT_TRUE(f.add("b", 0, true));  // another client: never closed for a's room
    EXPECT_TRUE(f.add("a", 20, true));
    EXPECT_TRUE(f.add("a", 40, true));
    EXPECT_EQ(f.closed(), (std::vector<bool>{false, true, false, false, false}));
    EXPECT_EQ(f.registry.count("a"), 3u);
    EXPECT_EQ(f.registry.count("b"), 1u);
}

TEST(ConnectionRegistry, BusyConnectionsAreNeverClosedForRoom) {
    Fixture f(100, 2);
    EXPECT_TRUE(f.add("a", 0, false)); // a request being answered
    EXPECT_TRUE(f.add("a", 5, true));
    EXPECT_TRUE(f.add("a", 9, true)); // closes the waiting one, not the older busy one
    EXPECT_EQ(f.closed(), (std::vector<bool>{false, true, false}));
    f.conns[2]->waiting = false;
    EXPECT_FALSE(f.add("a", 12, true)); // every connection busy: the new one is refused
    EXPECT_EQ(f.registry.size(), 2u);
}

TEST(ConnectionRegistry, GlobalCapClosesTheLongestWaitingOfAnyClient) {
    Fixture f(3, 3);
    EXPECT_TRUE(f.add("a", 50, true));
    EXPECT_TRUE(f.add("b", 20, true));
    EXPECT_TRUE(f.add("c", 30, false));
    EXPECT_TRUE(f.add("d", 60, true));
    EXPECT_EQ(f.closed(), (std::vector<bool>{false, true, false, false}));
    EXPECT_EQ(f.registry.size(), 3u);
    f.registry.close_all();
    EXPECT_EQ(f.registry.size(), 0u);
}
