#pragma once
// The HTTP/1.1 server: one I/O thread (Boost.Asio) owns every socket, parses with
// Boost.Beast's parser and keeps the deadlines; complete requests run on a handler pool.
// Idle and slow connections cost a socket and a buffer, never a thread (docs/api.md).
#include "http/connection_registry.h"
#include "http/handler_pool.h"
#include "http/limits.h"
#include "http/router.h"
#include "http/transport.h"

#include <atomic>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace specd::http {

class Listener;

class Server {
  public:
    // `router` must outlive the server. The caps are lowered to fit the open-file limit,
    // which is raised to its hard limit first.
    Server(const Router & router, Limits limits);
    // After stop(), and after run() has returned on its thread.
    ~Server();

    // Throws std::runtime_error when the address is taken or unavailable.
    void bind(const std::string & host, int port);
    // Serves on the calling thread until stop().
    void run();
    // Closes the listener and every connection, waits for running handlers to return (they
    // see their clients gone), then ends run(). Safe from any thread, more than once.
    void stop();

    const Limits & limits() const { return limits_; }

  private:
    std::unique_ptr<boost::asio::io_context> io_; // first: destroyed last
    Limits                                   limits_;
    HandlerPool                              pool_;
    ConnectionRegistry                       registry_;
    Transport                                transport_;
    std::unique_ptr<Listener>                listener_;
    std::atomic<bool>                        stopping_{false};
};

} // namespace specd::http
