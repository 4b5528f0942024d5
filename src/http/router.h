#pragma once
// Routes and the hooks around them. The transport asks the router, on its I/O thread, whether
// a request head is refused (the guard: access rules) and which route takes it (how its body
// is read); a handler thread then runs the route. Every answer, refusals included, passes the
// decorator (response headers such as CORS) before its head is sent.
#include "http/request.h"
#include "http/response.h"

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace specd::http {

// How a route reads its body: whole before the handler runs (capped at Limits::max_body), or
// streamed by the handler through Request::read_body (no size limit: blob uploads).
enum class BodyMode { whole, streamed };

using Handler = std::function<void(Request &, Response &)>;

struct Route {
    std::string method;
    std::string path;           // exact, or the prefix before a trailing '*'
    bool        prefix = false; // the rest of the path (not empty) is the request's params[0]
    BodyMode    body   = BodyMode::whole;
    Handler     handler;
};

class Router {
  public:
    // `path` is exact, or ends in '*' to take any longer path with that prefix.
    void add(std::string method, std::string path, Handler handler, BodyMode body = BodyMode::whole);
    void get(std::string path, Handler handler) { add("GET", std::move(path), std::move(handler)); }
    void post(std::string path, Handler handler, BodyMode body = BodyMode::whole) {
        add("POST", std::move(path), std::move(handler), body);
    }
    void del(std::string path, Handler handler) { add("DELETE", std::move(path), std::move(handler)); }

    // Sees every request head before routing: fills `res` and returns true to refuse it.
    using Guard = std::function<bool(const Request &, Response &)>;
    // Adds headers to every answer before its head is sent.
    using Decorator = std::function<void(const Request &, Response &)>;
    // The body of a refusal (status, message) in the shape of the request's API (without
    // one: the message as plain text).
    using ErrorWriter = std::function<void(const Request &, int status, const std::string & message, Response &)>;
    // Turns what a handler threw (before it streamed anything) into an answer.
    using ExceptionMapper = std::function<void(const Request &, const std::exception &, Response &)>;

    void set_guard(Guard guard) { guard_ = std::move(guard); }
    void set_decorator(Decorator decorator) { decorator_ = std::move(decorator); }
    void set_error_writer(ErrorWriter writer) { error_writer_ = std::move(writer); }
    void set_exception_mapper(ExceptionMapper mapper) { exception_mapper_ = std::move(mapper); }

    // The transport's side.
    bool          guard(const Request & req, Response & res) const { return guard_ && guard_(req, res); }
    // The route for the request (HEAD takes GET's routes), its params set; null for none.
    const Route * match(Request & req) const;
    void          refuse(const Request & req, int status, const std::string & message, Response & res) const;
    // Runs the route's handler; an exception becomes the answer, or is rethrown when the
    // answer was already streaming (the transport then ends the connection).
    void          run(const Route & route, Request & req, Response & res) const;
    void          decorate(const Request & req, Response & res) const {
        if (decorator_) decorator_(req, res);
    }

  private:
    std::vector<Route> routes_;
    Guard              guard_;
    Decorator          decorator_;
    ErrorWriter        error_writer_;
    ExceptionMapper    exception_mapper_;
};

} // namespace specd::http
