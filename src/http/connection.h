#pragma once
// One client connection, driven on the server's I/O thread (docs/api.md, Connections):
//
//   head      reading a request head: against the head deadline from its first byte (a new
//             connection's from the accept), or the idle timeout before that byte on a
//             keep-alive connection. Only here may the registry close it to make room.
//   body      reading a body that is read whole (capped at max_body), each read within the
//             idle timeout. Refusals (access, limits, unknown routes) are answered from the
//             head, before any body byte is read.
//   handling  a handler thread has the request; the connection keeps reading, so that a
//             client that leaves is noticed at once (and pipelined requests wait in the
//             buffer, answered in order afterwards). A streamed body is read as the handler
//             asks for it.
//   lingering after an answer that ends the connection: the write side is shut, unread
//             input is drained for a moment, so that the answer is not lost to a reset.
//
// Handlers never touch the socket: their answers come here as posted calls (Exchange).
#include "http/connection_registry.h"
#include "http/transport.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace specd::http {

class Exchange;

// A piece of a streamed body, as Connection::pull_body hands it over.
struct BodyPiece {
    bool        end = false; // no more body
    std::string data;
    std::string error;       // the body cannot be read further
};

class Connection : public Tracked, public std::enable_shared_from_this<Connection> {
  public:
    using Done = std::function<void(bool ok)>;

    Connection(boost::asio::ip::tcp::socket socket, std::string client, Transport & transport);
    ~Connection() override;

    void start();

    const std::string & client() const override { return client_; }
    bool                awaiting_head() const override { return phase_ == Phase::head || phase_ == Phase::lingering; }
    Clock::time_point   waiting_since() const override { return waiting_since_; }
    void                close() override;

    // The request being handled, from its Exchange (all on the I/O thread).
    void respond(Response res);                      // a whole answer
    void open_stream(Response head, Done done);      // a streamed answer's head
    void write_chunk(std::string data, Done done);   // one piece of it
    void end_stream();                               // its end
    void pull_body(std::function<void(BodyPiece)> done);

  private:
    enum class Phase { head, body, handling, lingering, closed };
    using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;
    struct Write {
        std::string bytes;
        Done        done;
        size_t      sent = 0;
    };

    void next_request(bool new_connection = false);
    void read_more();
    void on_read(boost::system::error_code ec, size_t n);
    void on_peer_gone();
    void parse_head();
    void on_head();
    void parse_body();
    void hand_over_piece();
    void dispatch();

    // Answers built here: refusals, and the transport's own errors.
    void refuse(const Request & req, int status, const std::string & message);
    void refuse_malformed(boost::system::error_code ec);
    bool closes_after_answer() const;
    std::string head_bytes(const Response & res, std::optional<size_t> content_length, bool close) const;
    void after_answer(bool close);
    void linger();

    void queue_write(std::string bytes, Done done);
    void write_next();
    void on_written(boost::system::error_code ec, size_t n);

    void arm_read_deadline(Millis after);

    boost::asio::ip::tcp::socket socket_;
    boost::asio::steady_timer    read_timer_;  // head deadline, idle timeout, body stall, linger
    boost::asio::steady_timer    write_timer_; // a write that makes no progress
    std::string                  client_;
    Transport &                  t_;

    boost::beast::flat_buffer    buffer_;
    std::optional<Parser>        parser_;
    Phase                        phase_ = Phase::head;
    Clock::time_point            waiting_since_;
    bool                         reading_      = false; // a read is in flight
    bool                         head_started_ = false; // a byte of the current head arrived
    bool                         peer_gone_    = false; // the client closed or reset
    bool                         keep_alive_   = true;
    bool                         chunked_out_  = true;  // HTTP/1.1: streamed answers are chunked
    bool                         head_only_    = false; // a HEAD request: no answer body
    bool                         body_streamed_ = false;

    Request                                 pending_; // the request between its head and dispatch
    const Route *                           route_ = nullptr;
    std::shared_ptr<Exchange>               exchange_;
    std::function<void(BodyPiece)>          body_waiter_;
    std::deque<Write>                       writes_;
    bool                                    writing_ = false;
};

} // namespace specd::http
