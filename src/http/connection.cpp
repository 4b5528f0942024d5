#include "http/connection.h"

#include "http/exchange.h"
#include "http/head_check.h"

#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>

#include <limits>

namespace specd::http {

namespace asio  = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr size_t k_read_size = 16 * 1024;
// Input kept unparsed: a whole head, plus pipelined requests read ahead while one is handled.
constexpr size_t k_max_buffered = Limits::k_max_head + k_read_size;
// A streamed body reaches its handler in pieces of about this size.
constexpr size_t k_piece = 256 * 1024;
// An answer goes out in slices of at most this size, each under the write deadline.
constexpr size_t k_write_slice = 256 * 1024;

std::string chunk(std::string_view data) {
    char size[20];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string out;
    out.reserve(static_cast<size_t>(n) + data.size() + 2);
    out.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
    return out;
}

// The request line's target, from raw bytes, for a head the parser refused before reading it.
std::string raw_target(std::string_view input) {
    const auto line  = input.substr(0, input.find("\r\n"));
    const auto first = line.find(' ');
    if (first == std::string_view::npos) return "";
    const auto rest = line.substr(first + 1);
    return std::string(rest.substr(0, rest.find(' ')));
}

void set_target(Request & req, std::string target) {
    req.target         = std::move(target);
    const auto q       = req.target.find('?');
    req.path           = decode_path(std::string_view(req.target).substr(0, q));
    req.query          = q == std::string::npos ? "" : req.target.substr(q + 1);
}

} // namespace

Connection::Connection(asio::ip::tcp::socket socket, std::string client, Transport & transport) :
    socket_(std::move(socket)), read_timer_(socket_.get_executor()), write_timer_(socket_.get_executor()),
    client_(std::move(client)), t_(transport), buffer_(k_max_buffered) {}

// Not in the registry by now: close() removed it, and only a closed connection has no
// operation in flight to keep it alive (the registry is the I/O thread's; this may run on
// a handler thread that held the last reference).
Connection::~Connection() = default;

void Connection::start() { next_request(true); }

void Connection::close() {
    if (phase_ == Phase::closed) return;
    phase_ = Phase::closed;
    t_.registry.remove(this);
    error_code ec;
    socket_.close(ec); // reads and writes in flight end with operation_aborted
    read_timer_.cancel();
    write_timer_.cancel();
    if (exchange_) {
        exchange_->mark_gone();
        exchange_.reset(); // the handler keeps it until it returns
    }
    if (auto waiter = std::move(body_waiter_)) {
        body_waiter_ = nullptr;
        waiter(BodyPiece{false, "", "the connection was closed"});
    }
}

// ---- reading ---------------------------------------------------------------------------

void Connection::next_request(bool new_connection) {
    phase_ = Phase::head;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(Limits::k_max_head));
    // Bodies are counted here (blob uploads have no limit). Not boost::none: Boost 1.74's
    // parser then refuses every Content-Length (it compares the length with an empty optional).
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    pending_       = Request{};
    route_         = nullptr;
    body_streamed_ = false;
    head_only_     = false;
    waiting_since_ = Clock::now();
    // A new connection's head deadline runs from the accept (one that sends nothing is closed
    // as one that sends too slowly); between keep-alive requests the idle timeout applies
    // until the next head's first byte.
    head_started_ = new_connection || buffer_.size() > 0;
    arm_read_deadline(head_started_ ? t_.limits.head_timeout : t_.limits.idle_timeout);
    if (head_started_) parse_head();
    else read_more();
}

void Connection::read_more() {
    if (reading_ || peer_gone_ || phase_ == Phase::closed) return;
    const size_t room = buffer_.max_size() - buffer_.size();
    // Full: in a head the parser has refused it by now; while handling, read-ahead stops.
    if (room == 0) return;
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(std::min(room, k_read_size)),
                            [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(error_code ec, size_t n) {
    reading_ = false;
    if (phase_ == Phase::closed) return;
    if (ec) {
        on_peer_gone();
        return;
    }
    buffer_.commit(n);
    switch (phase_) {
        case Phase::head:
            if (!head_started_) {
                head_started_ = true;
                arm_read_deadline(t_.limits.head_timeout);
            }
            parse_head();
            break;
        case Phase::body: parse_body(); break;
        case Phase::handling:
            if (body_waiter_) parse_body();
            else read_more();
            break;
        case Phase::lingering:
            buffer_.consume(buffer_.size());
            read_more();
            break;
        case Phase::closed: break;
    }
}

void Connection::on_peer_gone() {
    peer_gone_ = true;
    if (phase_ != Phase::handling) {
        close();
        return;
    }
    // The handler learns it (its job is cancelled); what it answers may still be written.
    if (exchange_) exchange_->mark_gone();
    if (body_waiter_) parse_body();
}

void Connection::arm_read_deadline(Millis after) {
    read_timer_.expires_after(after);
    read_timer_.async_wait([self = shared_from_this()](error_code ec) {
        // A re-armed timer still calls the handler it replaced: only a due expiry counts.
        if (ec || self->read_timer_.expiry() > Clock::now()) return;
        self->close();
    });
}

void Connection::parse_head() {
    while (buffer_.size() > 0) {
        error_code   ec;
        const size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == bhttp::error::need_more) break;
        if (ec) {
            refuse_malformed(ec);
            return;
        }
        if (parser_->is_header_done()) {
            on_head();
            return;
        }
        if (used == 0) break;
    }
    read_more();
}

void Connection::on_head() {
    read_timer_.cancel();
    phase_ = Phase::body;
    const auto & msg = parser_->get();
    Request      req;
    req.method = std::string(msg.method_string());
    set_target(req, std::string(msg.target()));
    for (const auto & f : msg) req.headers.add(std::string(f.name_string()), std::string(f.value()));
    req.client   = client_;
    keep_alive_  = parser_->keep_alive();
    chunked_out_ = msg.version() >= 11;
    head_only_   = req.method == "HEAD";

    if (auto r = check_head(req)) {
        keep_alive_ = false;
        refuse(req, r->status, r->message);
        return;
    }
    if (Response res; t_.router.guard(req, res)) {
        t_.router.decorate(req, res);
        respond(std::move(res));
        return;
    }
    const Route * route = t_.router.match(req);
    if (!route) {
        refuse(req, 404, "not found");
        return;
    }
    const bool     chunked = parser_->chunked();
    const uint64_t length  = parser_->content_length().value_or(0);
    // A chunked body has no length to check before it arrives; only the JSON routes (POST,
    // DELETE) take one, counted as it comes.
    if (chunked && req.method != "POST" && req.method != "DELETE") {
        refuse(req, 411, "a chunked request body is only accepted by POST and DELETE routes");
        return;
    }
    if (route->body == BodyMode::whole && length > t_.limits.max_body) {
        refuse(req, 413, "request body is larger than " + std::to_string(t_.limits.max_body) +
                             " bytes (the limit, SPECD_MAX_BODY)");
        return;
    }
    if (const auto enc = req.headers.get("Content-Encoding"); !enc.empty() && !iequals(enc, "identity")) {
        refuse(req, 400, "the request body could not be read (unsupported Content-Encoding: " + enc + ")");
        return;
    }
    // `curl -d @big.json` asks before it sends; everything that could refuse it has passed.
    if ((chunked || length > 0) && iequals(req.headers.get("Expect"), "100-continue")) {
        queue_write("HTTP/1.1 100 Continue\r\n\r\n", nullptr);
    }
    pending_ = std::move(req);
    route_   = route;
    if (route->body == BodyMode::streamed) {
        body_streamed_ = true;
        dispatch();
        return;
    }
    parser_->eager(true);
    parse_body();
}

void Connection::parse_body() {
    auto & body = parser_->get().body();
    while (buffer_.size() > 0 && !parser_->is_done()) {
        error_code   ec;
        const size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == bhttp::error::need_more) break;
        if (ec) {
            if (body_streamed_) {
                peer_gone_ = true; // the framing is lost: nothing more can be read
                hand_over_piece();
                return;
            }
            keep_alive_ = false;
            refuse(pending_, 400, "invalid request body framing (" + ec.message() + ")");
            return;
        }
        if (!body_streamed_ && body.size() > t_.limits.max_body) {
            refuse(pending_, 413, "request body is larger than " + std::to_string(t_.limits.max_body) +
                                      " bytes (the limit, SPECD_MAX_BODY)");
            return;
        }
        if (body_streamed_ && body.size() >= k_piece) break;
        if (used == 0) break;
    }
    if (body_streamed_) {
        if (!body.empty() || parser_->is_done() || peer_gone_) {
            hand_over_piece();
            return;
        }
    } else if (parser_->is_done()) {
        read_timer_.cancel();
        pending_.body = std::move(body);
        dispatch();
        return;
    } else if (peer_gone_) {
        close();
        return;
    }
    arm_read_deadline(t_.limits.idle_timeout);
    read_more();
}

void Connection::hand_over_piece() {
    read_timer_.cancel();
    auto      waiter = std::move(body_waiter_);
    body_waiter_     = nullptr;
    auto &    body   = parser_->get().body();
    BodyPiece piece;
    if (!body.empty()) {
        piece.data = std::move(body);
        body.clear();
    } else if (parser_->is_done()) {
        piece.end = true;
    } else {
        piece.error = "the request body ended early (the client closed the connection or broke its framing)";
    }
    if (piece.end) read_more(); // from now on, only watching for the client leaving
    waiter(std::move(piece));
}

void Connection::pull_body(std::function<void(BodyPiece)> done) {
    if (phase_ != Phase::handling || !body_streamed_) {
        done(BodyPiece{false, "", "the connection was closed"});
        return;
    }
    body_waiter_ = std::move(done);
    parse_body();
}

void Connection::dispatch() {
    phase_    = Phase::handling;
    exchange_ = std::make_shared<Exchange>(shared_from_this(), socket_.get_executor());
    if (!body_streamed_) read_more(); // notices a client that leaves; reads ahead what it pipelines
    t_.pool.submit([ex = exchange_, route = route_, req = std::move(pending_), &router = t_.router]() mutable {
        ex->run(router, *route, std::move(req));
    });
    pending_ = Request{};
}

// ---- answering -------------------------------------------------------------------------

bool Connection::closes_after_answer() const {
    // An unread body (refused from its head, or left by its handler) cannot be skipped safely.
    return !keep_alive_ || peer_gone_ || !parser_ || !parser_->is_done();
}

std::string Connection::head_bytes(const Response & res, std::optional<size_t> content_length, bool close) const {
    std::string h = "HTTP/1.1 " + std::to_string(res.status) + " ";
    h += std::string(bhttp::obsolete_reason(bhttp::int_to_status(static_cast<unsigned>(res.status))));
    h += "\r\n";
    for (const auto & [name, value] : res.headers.fields()) {
        if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") || iequals(name, "Connection")) continue;
        h += name + ": " + value + "\r\n";
    }
    const bool no_body = res.status == 204 || res.status == 304 || res.status < 200;
    if (content_length && !no_body) h += "Content-Length: " + std::to_string(*content_length) + "\r\n";
    if (!content_length && chunked_out_) h += "Transfer-Encoding: chunked\r\n";
    if (close) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

void Connection::respond(Response res) {
    if (phase_ == Phase::closed || phase_ == Phase::lingering) return;
    const bool  close = closes_after_answer();
    std::string bytes = head_bytes(res, res.body.size(), close);
    if (!head_only_) bytes += res.body;
    queue_write(std::move(bytes), [self = shared_from_this(), close](bool ok) { self->after_answer(close || !ok); });
}

void Connection::refuse(const Request & req, int status, const std::string & message) {
    Response res;
    t_.router.refuse(req, status, message, res);
    t_.router.decorate(req, res);
    respond(std::move(res));
}

void Connection::refuse_malformed(error_code ec) {
    read_timer_.cancel();
    phase_      = Phase::body; // no longer waiting for a head: answering, then closing
    keep_alive_ = false;
    Request req; // what is known of it, so that the error takes the shape of its API
    std::string target(parser_->get().target());
    if (target.empty()) {
        const auto in = buffer_.data();
        target        = raw_target(std::string_view(static_cast<const char *>(in.data()), in.size()));
    }
    set_target(req, std::move(target));
    if (ec == bhttp::error::header_limit) {
        refuse(req, 431, "request head (request line and header fields) is larger than " +
                             std::to_string(Limits::k_max_head) + " bytes");
    } else if (ec == bhttp::error::bad_content_length) {
        refuse(req, 400, "invalid Content-Length (a number of bytes, given once)");
    } else if (ec == bhttp::error::bad_transfer_encoding) {
        refuse(req, 400, "invalid Transfer-Encoding (only chunked, given once, never beside Content-Length)");
    } else {
        refuse(req, 400, "invalid HTTP request (" + ec.message() + ")");
    }
}

void Connection::open_stream(Response head, Done done) {
    if (phase_ != Phase::handling) {
        done(false);
        return;
    }
    // HTTP/1.0 has no chunks: the body runs to the end of the connection.
    if (!chunked_out_) keep_alive_ = false;
    queue_write(head_bytes(head, std::nullopt, closes_after_answer()), std::move(done));
}

void Connection::write_chunk(std::string data, Done done) {
    if (phase_ != Phase::handling) {
        done(false);
        return;
    }
    queue_write(chunked_out_ ? chunk(data) : std::move(data), std::move(done));
}

void Connection::end_stream() {
    if (phase_ != Phase::handling) return;
    const bool close = closes_after_answer();
    queue_write(chunked_out_ ? "0\r\n\r\n" : "", [self = shared_from_this(), close](bool ok) { self->after_answer(close || !ok); });
}

void Connection::after_answer(bool close) {
    exchange_.reset();
    if (phase_ == Phase::closed) return;
    if (!close) {
        next_request();
    } else if (peer_gone_) {
        this->close();
    } else {
        linger();
    }
}

void Connection::linger() {
    phase_ = Phase::lingering;
    waiting_since_ = Clock::now();
    error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    buffer_.consume(buffer_.size());
    arm_read_deadline(Limits::k_linger);
    read_more(); // until the client closes its side, or the linger time is over
}

// ---- writing ---------------------------------------------------------------------------

void Connection::queue_write(std::string bytes, Done done) {
    if (phase_ == Phase::closed) {
        if (done) done(false);
        return;
    }
    writes_.push_back({std::move(bytes), std::move(done)});
    if (!writing_) write_next();
}

void Connection::write_next() {
    if (writes_.empty()) {
        writing_ = false;
        write_timer_.cancel();
        return;
    }
    writing_ = true;
    // Written a slice at a time, each within the idle timeout: a client that reads nothing
    // for that long is gone as far as this server cares, one that reads slowly is not.
    write_timer_.expires_after(t_.limits.idle_timeout);
    write_timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (ec || self->write_timer_.expiry() > Clock::now()) return;
        self->close();
    });
    const Write & w = writes_.front();
    asio::async_write(socket_, asio::buffer(w.bytes.data() + w.sent, std::min(w.bytes.size() - w.sent, k_write_slice)),
                      [self = shared_from_this()](error_code ec, size_t n) { self->on_written(ec, n); });
}

void Connection::on_written(error_code ec, size_t n) {
    if (ec) {
        writing_ = false;
        std::deque<Write> failed;
        failed.swap(writes_);
        close();
        for (auto & w : failed) {
            if (w.done) w.done(false);
        }
        return;
    }
    Write & w = writes_.front();
    w.sent += n;
    if (w.sent < w.bytes.size()) {
        write_next();
        return;
    }
    Write done = std::move(w);
    writes_.pop_front();
    if (done.done) done.done(true);
    write_next();
}

} // namespace specd::http
