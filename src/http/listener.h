#pragma once
// Accepts connections on the I/O thread and registers each, making room under the caps
// (ConnectionRegistry) before it starts reading.
#include "http/transport.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <string>

namespace specd::http {

class Listener {
  public:
    Listener(boost::asio::io_context & io, Transport & transport);

    // Throws std::runtime_error when the address cannot be resolved or bound.
    void bind(const std::string & host, int port);
    void start();
    void stop();

  private:
    void accept();
    void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);

    boost::asio::io_context &      io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer      retry_; // after a failed accept (out of file descriptors)
    Transport &                    t_;
};

} // namespace specd::http
