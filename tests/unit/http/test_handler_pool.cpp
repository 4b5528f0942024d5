#include "http/handler_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

using specd::http::HandlerPool;
using namespace std::chrono_literals;

namespace {

// Holds every task that waits on it until release().
class Gate {
  public:
    void wait() {
      std::unique_lock lock(m_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    void release() {
      std::lock_guard lock(m_);
      open_ = true;
      cv_.notify_all();
    }
    bool wait_for_waiters(int n) {
      std::unique_lock lock(m_);
      return cv_.wait_for(lock, 5s, [&] { return waiting_ >= n; });
    }
    int waiting() {
      std::lock_guard lock(m_);
      return waiting_;
    }

  private:
    std::mutex              m_;
    std::condition_variable cv_;
    int                     waiting_ = 0;
    bool                    open_    = false;
};

} // namespace

TEST(HandlerPool, GrowsWhileEveryThreadIsBusy) {
    HandlerPool pool(8);
    Gate        gate;
    for (int i = 0; i < 5; ++i) pool.submit([&] { gate.wait(); });
    ASSERT_TRUE(gate.wait_for_waiters(5)); // five blocking tasks run at once
    EXPECT_EQ(pool.threads(), 5u);
    gate.release();
    pool.wait_idle();
    // Idle threads are reused, not added to.
    for (int i = 0; i < 5; ++i) pool.submit([] {});
    pool.wait_idle();
    EXPECT_EQ(pool.threads(), 5u);
}

TEST(HandlerPool, PastTheBoundTasksWait) {
    HandlerPool        pool(2);
    Gate               gate;
    std::mutex         m;
    std::vector<int>   order;
    pool.submit([&] { gate.wait(); });
    pool.submit([&] { gate.wait(); });
    ASSERT_TRUE(gate.wait_for_waiters(2));
    for (int i = 0; i < 4; ++i) {
        pool.submit([&, i] {
            std::lock_guard lock(m);
            order.push_back(i);
        });
    }
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(pool.threads(), 2u);
    EXPECT_TRUE(order.empty()); // both threads are held
    gate.release();
    pool.wait_idle();
    // All ran, on the two threads there are.
    ASSERT_EQ(order.size(), 4u);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(pool.threads(), 2u);
}

TEST(HandlerPool, IdleThreadsExitAndThePoolStillWorks) {
    std::atomic<int> ran{0};
    {
        HandlerPool pool(4, 50ms);
        Gate        gate;
        for (int i = 0; i < 3; ++i) pool.submit([&] { gate.wait(); });
        ASSERT_TRUE(gate.wait_for_waiters(3));
        gate.release();
        pool.wait_idle();
        for (int i = 0; i < 100 && pool.threads() > 0; ++i) std::this_thread::sleep_for(10ms);
        pool.submit([&] { ++ran; }); // joins the exited threads, starts a new one
        EXPECT_EQ(pool.threads(), 1u);
        pool.wait_idle();
        for (int i = 0; i < 100 && pool.threads() > 0; ++i) std::this_thread::sleep_for(10ms);
        EXPECT_EQ(pool.threads(), 0u);
    } // destroyed with exited threads not yet joined: must not terminate
    EXPECT_EQ(ran, 1);
}

TEST(HandlerPool, DestructionRunsQueuedTasks) {
    std::atomic<int> ran{0};
    {
        HandlerPool pool(1);
        for (int i = 0; i < 10; ++i) pool.submit([&] { ++ran; });
    }
    EXPECT_EQ(ran, 10);
}
