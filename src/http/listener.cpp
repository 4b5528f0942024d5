#include "http/listener.h"

#include "http/connection.h"

#include <boost/asio/ip/tcp.hpp>

#include <stdexcept>

namespace specd::http {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

Listener::Listener(asio::io_context & io, Transport & transport) : io_(io), acceptor_(io), retry_(io), t_(transport) {}

void Listener::bind(const std::string & host, int port) {
    const std::string where = host + ":" + std::to_string(port);
    error_code        ec;
    tcp::resolver     resolver(io_);
    const auto        results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
    if (ec || results.empty()) throw std::runtime_error("cannot listen on " + where + " (cannot resolve the host)");
    for (const auto & r : results) {
        error_code err;
        acceptor_.open(r.endpoint().protocol(), err);
        if (!err) acceptor_.set_option(tcp::acceptor::reuse_address(true), err);
        if (!err) acceptor_.bind(r.endpoint(), err);
        if (!err) acceptor_.listen(asio::socket_base::max_listen_connections, err);
        if (!err) return;
        acceptor_.close(err);
    }
    throw std::runtime_error("cannot listen on " + where + " (address in use or not available)");
}

void Listener::start() { accept(); }

void Listener::stop() {
    error_code ec;
    acceptor_.close(ec);
    retry_.cancel();
}

void Listener::accept() {
    acceptor_.async_accept([this](error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void Listener::on_accept(error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) return;
    if (ec) {
        // Out of file descriptors, most likely: try again shortly instead of spinning.
        retry_.expires_after(std::chrono::milliseconds(50));
        retry_.async_wait([this](error_code e) {
            if (!e) accept();
        });
        return;
    }
    error_code     err;
    const auto     peer   = socket.remote_endpoint(err);
    std::string    client = err ? "" : peer.address().to_string();
    if (!err && t_.registry.make_room(client)) {
        socket.set_option(tcp::no_delay(true), err); // streamed tokens go out as they come
        auto c = std::make_shared<Connection>(std::move(socket), std::move(client), t_);
        t_.registry.add(c.get());
        c->start();
    }
    accept(); // a connection that found no room is closed as `socket` goes
}

} // namespace specd::http
