#pragma once
// The threads that run handlers. A handler may block for as long as its request lasts (a
// generation waits on its job's events), so the pool grows when every thread is busy, up to
// a bound; past it, tasks wait in arrival order. A thread idle for a while exits. Only
// complete requests reach the pool: idle or slow connections hold no thread.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace specd::http {

class HandlerPool {
  public:
    explicit HandlerPool(size_t max_threads, std::chrono::milliseconds idle_exit = std::chrono::seconds(60));
    ~HandlerPool(); // waits for every task, queued ones included

    void submit(std::function<void()> task);
    // Blocks until no task is queued or running.
    void wait_idle();

    size_t threads() const;

  private:
    void work(std::list<std::thread>::iterator self);
    void join_finished(std::unique_lock<std::mutex> & lock);

    const size_t                      max_threads_;
    const std::chrono::milliseconds   idle_exit_;
    mutable std::mutex                mutex_;
    std::condition_variable           wake_;
    std::condition_variable           idle_;
    std::deque<std::function<void()>> tasks_;
    std::list<std::thread>            threads_;
    std::list<std::thread>            finished_; // exited threads, joined by the next caller
    size_t                            waiting_ = 0; // threads waiting for a task
    size_t                            running_ = 0; // tasks being run
    bool                              stopping_ = false;
};

} // namespace specd::http
