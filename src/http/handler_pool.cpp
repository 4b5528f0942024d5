#include "http/handler_pool.h"

namespace specd::http {

HandlerPool::HandlerPool(size_t max_threads, std::chrono::milliseconds idle_exit) :
    max_threads_(max_threads == 0 ? 1 : max_threads), idle_exit_(idle_exit) {}

HandlerPool::~HandlerPool() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return tasks_.empty() && running_ == 0; });
    stopping_ = true;
    wake_.notify_all();
    idle_.wait(lock, [&] { return threads_.empty(); });
    join_finished(lock); // threads that exited when idle, too
}

void HandlerPool::submit(std::function<void()> task) {
    std::unique_lock lock(mutex_);
    join_finished(lock);
    tasks_.push_back(std::move(task));
    if (waiting_ >= tasks_.size() || threads_.size() >= max_threads_) {
        wake_.notify_one();
        return;
    }
    threads_.emplace_back();
    const auto self = std::prev(threads_.end());
    *self           = std::thread([this, self] { work(self); });
}

void HandlerPool::wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return tasks_.empty() && running_ == 0; });
}

size_t HandlerPool::threads() const {
    std::lock_guard lock(mutex_);
    return threads_.size();
}

void HandlerPool::work(std::list<std::thread>::iterator self) {
    std::unique_lock lock(mutex_);
    for (;;) {
        ++waiting_;
        const bool woken = wake_.wait_for(lock, idle_exit_, [&] { return stopping_ || !tasks_.empty(); });
        --waiting_;
        if (tasks_.empty()) {
            if (stopping_ || !woken) break;
            continue;
        }
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        ++running_;
        lock.unlock();
        task();
        task = nullptr; // what the task held goes before the pool counts it as done
        lock.lock();
        --running_;
        if (tasks_.empty() && running_ == 0) idle_.notify_all();
    }
    // Exiting: someone else joins this thread (a thread cannot join itself).
    finished_.splice(finished_.end(), threads_, self);
    idle_.notify_all();
}

void HandlerPool::join_finished(std::unique_lock<std::mutex> & lock) {
    if (finished_.empty()) return;
    std::list<std::thread> done;
    done.swap(finished_);
    lock.unlock();
    for (auto & t : done) t.join();
    lock.lock();
}

} // namespace specd::http
