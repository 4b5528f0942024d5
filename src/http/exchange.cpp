#include "http/exchange.h"

#include "http/connection.h"

#include <boost/asio/post.hpp>

#include <future>

namespace specd::http {

template <class Op> void Exchange::post(Op op) {
    boost::asio::post(io_, [conn = conn_, op = std::move(op)]() mutable { op(*conn); });
}

void Exchange::run(const Router & router, const Route & route, Request req) {
    req.channel = this;
    Response res;
    res.set_stream_opener([&](Response & r) -> ResponseStream & {
        router.decorate(req, r);
        Response head;
        head.status  = r.status;
        head.headers = r.headers;
        std::promise<bool> sent;
        auto               result = sent.get_future();
        post([&sent, head = std::move(head)](Connection & c) mutable {
            c.open_stream(std::move(head), [&sent](bool ok) { sent.set_value(ok); });
        });
        if (!result.get()) gone_ = true;
        return *this;
    });
    try {
        router.run(route, req, res);
    } catch (...) {
        // It threw after its answer began streaming: the answer cannot be completed.
        post([](Connection & c) { c.close(); });
        return;
    }
    if (res.streamed()) {
        post([](Connection & c) { c.end_stream(); });
        return;
    }
    router.decorate(req, res);
    post([res = std::move(res)](Connection & c) mutable { c.respond(std::move(res)); });
}

bool Exchange::write(std::string_view data) {
    if (gone_) return false;
    if (data.empty()) return true; // an empty chunk would end the answer
    std::promise<bool> sent;
    auto               result = sent.get_future();
    post([&sent, data = std::string(data)](Connection & c) mutable {
        c.write_chunk(std::move(data), [&sent](bool ok) { sent.set_value(ok); });
    });
    if (!result.get()) gone_ = true;
    return !gone_;
}

bool Exchange::read_body(std::string & piece) {
    std::promise<BodyPiece> got;
    auto                    result = got.get_future();
    post([&got](Connection & c) { c.pull_body([&got](BodyPiece p) { got.set_value(std::move(p)); }); });
    BodyPiece p = result.get();
    if (!p.error.empty()) throw BodyError(p.error);
    piece = std::move(p.data);
    return !p.end;
}

} // namespace specd::http
