#include "http/server.h"

#include "http/listener.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>

namespace specd::http {

namespace {

// File descriptors kept for everything but client connections: model files, the log, the
// store's files during a pull or create.
constexpr size_t k_reserved_fds = 256;

Limits fit_open_file_limit(Limits l) {
    const size_t files = raise_open_file_limit();
    const size_t room  = files > 2 * k_reserved_fds ? files - k_reserved_fds : files / 2;
    l.max_connections  = std::min(l.max_connections, room);
    l.max_connections_per_client = std::min(l.max_connections_per_client, l.max_connections);
    return l;
}

} // namespace

Server::Server(const Router & router, Limits limits) :
    io_(std::make_unique<boost::asio::io_context>(1)), limits_(fit_open_file_limit(limits)),
    pool_(limits_.max_handler_threads), registry_(limits_.max_connections, limits_.max_connections_per_client),
    transport_{router, pool_, registry_, limits_}, listener_(std::make_unique<Listener>(*io_, transport_)) {}

Server::~Server() {
    stop();
    // Operations that stop() cut short (a write to a connection it closed) still hold their
    // connections: run what is left of them, now that every socket is closed, so that all is
    // freed. poll() never blocks. run() has returned by now (the caller waited for it).
    io_->restart();
    io_->poll();
    listener_.reset();
}

void Server::bind(const std::string & host, int port) { listener_->bind(host, port); }

void Server::run() {
    if (stopping_) return;
    auto work = boost::asio::make_work_guard(*io_); // run() returns only when stop() says so
    listener_->start();
    io_->run();
}

void Server::stop() {
    if (stopping_.exchange(true)) return;
    boost::asio::post(*io_, [this] {
        listener_->stop();
        registry_.close_all();
    });
    // Handlers still running write to closed connections (which fail at once) and see their
    // clients gone; the I/O thread keeps running their posted calls until they are done.
    pool_.wait_idle();
    io_->stop();
}

} // namespace specd::http
