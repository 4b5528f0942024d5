#pragma once
// One request between its connection (I/O thread) and the handler thread that answers it.
// The handler blocks as it likes; whatever it asks of the socket (a chunk to send, a piece of
// a streamed body) is posted to the I/O thread and waited for, and the connection marks the
// exchange gone the moment its client leaves.
#include "http/request.h"
#include "http/response.h"
#include "http/router.h"

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <memory>

namespace specd::http {

class Connection;

class Exchange : public Channel, public ResponseStream {
  public:
    Exchange(std::shared_ptr<Connection> conn, boost::asio::any_io_executor io) : conn_(std::move(conn)), io_(std::move(io)) {}

    // On the handler thread: runs the route and hands the answer to the connection.
    void run(const Router & router, const Route & route, Request req);

    bool client_gone() const override { return gone_.load(); }
    bool read_body(std::string & piece) override;
    bool write(std::string_view data) override;

    // From the connection: its client left (or the server is closing it).
    void mark_gone() { gone_ = true; }

  private:
    // Posts `op(connection)` to the I/O thread without waiting.
    template <class Op> void post(Op op);

    std::shared_ptr<Connection>  conn_;
    boost::asio::any_io_executor io_;
    std::atomic<bool>            gone_{false};
};

} // namespace specd::http
