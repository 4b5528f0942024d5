#pragma once
// A request as a handler sees it: the head, the body (read whole before the handler runs,
// or piece by piece for a route that streams its body) and the link to the connection it
// came on.
#include "http/headers.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace specd::http {

// What a handler may ask of the connection its request came on. The transport implements it;
// calls may block the handler's thread, never the I/O thread.
class Channel {
  public:
    virtual ~Channel() = default;
    // The client closed or reset its connection (noticed as it happens, not polled).
    virtual bool client_gone() const = 0;
    // A streamed body's next piece, into `piece` (replaced); false at the end of the body.
    // Throws BodyError when the rest of the body cannot be read.
    virtual bool read_body(std::string & piece) = 0;
};

// A streamed body that cannot be read to its end: bad framing, the client left or stalled.
class BodyError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct Request {
    std::string              method; // as sent ("GET", "HEAD", "POST", ...)
    std::string              target; // as sent: path and query
    std::string              path;   // the target's path, percent-decoded
    std::string              query;  // the target's query, as sent, without the '?'
    Headers                  headers;
    std::string              body;   // BodyMode::whole routes: the whole body
    std::vector<std::string> params; // what the route's trailing '*' matched
    std::string              client; // the peer's address
    Channel *                channel = nullptr; // set while a handler runs

    bool client_gone() const { return channel && channel->client_gone(); }
    // BodyMode::streamed routes: see Channel::read_body.
    bool read_body(std::string & piece) { return channel && channel->read_body(piece); }
};

} // namespace specd::http
