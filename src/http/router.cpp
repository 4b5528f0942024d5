#include "http/router.h"

namespace specd::http {

void Router::add(std::string method, std::string path, Handler handler, BodyMode body) {
    Route r{std::move(method), std::move(path), false, body, std::move(handler)};
    if (!r.path.empty() && r.path.back() == '*') {
        r.path.pop_back();
        r.prefix = true;
    }
    routes_.push_back(std::move(r));
}

const Route * Router::match(Request & req) const {
    const std::string method = req.method == "HEAD" ? "GET" : req.method;
    for (const auto & r : routes_) {
        if (r.method != method) continue;
        if (!r.prefix && req.path == r.path) return &r;
        if (r.prefix && req.path.size() > r.path.size() && req.path.compare(0, r.path.size(), r.path) == 0) {
            req.params = {req.path.substr(r.path.size())};
            return &r;
        }
    }
    return nullptr;
}

void Router::refuse(const Request & req, int status, const std::string & message, Response & res) const {
    res.status = status;
    if (error_writer_) {
        error_writer_(req, status, message, res);
    } else {
        res.set_content(message, "text/plain; charset=utf-8");
    }
}

void Router::run(const Route & route, Request & req, Response & res) const {
    const auto answer = [&](const std::exception & e) {
        if (res.streamed()) throw;
        res = Response{};
        if (exception_mapper_) exception_mapper_(req, e, res);
        else refuse(req, 500, e.what(), res);
    };
    try {
        route.handler(req, res);
    } catch (const std::exception & e) {
        answer(e);
    } catch (...) {
        answer(std::runtime_error("internal error"));
    }
}

} // namespace specd::http
