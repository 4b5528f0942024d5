// The model store over HTTP: list, show, create, copy, delete, pull, push, and the blobs that
// `specd create` uploads before it creates a model on a remote server.
#include "api/http_json.h"
#include "api/model_transfer.h"
#include "api/ollama_response.h"
#include "api/routes.h"
#include "prepare/model_catalog.h"

#include <exception>

namespace specd::api {

namespace {

std::string model_name(const json & body) {
    auto name = opt_string(body, "model");
    if (!name) name = opt_string(body, "name");
    if (!name || name->empty()) throw bad_request("model is required");
    return *name;
}

// POST /api/blobs/<digest>: the body streams to disk, whatever its size; the digest is
// checked before any byte is stored, and again against what arrived.
void upload_blob(models::Store & store, http::Request & req, http::Response & res) {
    const std::string digest = req.params[0];
    (void) store.blob_path(digest); // a bad digest is a 400 before the body is read
    std::string piece;
    if (store.has_blob(digest)) {
        while (req.read_body(piece)) {}
        res.status = 200;
        return;
    }
    models::Store::WriteGuard guard(store);
    auto                      writer = store.begin_blob();
    // A write that fails (disk full) still reads the body to its end: the client then gets
    // the reason, where a connection closed under it would only break its upload.
    std::exception_ptr failed;
    while (req.read_body(piece)) {
        if (failed) continue;
        try {
            writer.write(piece.data(), piece.size());
        } catch (...) {
            failed = std::current_exception();
        }
    }
    if (failed) std::rethrow_exception(failed);
    writer.commit(digest);
    res.status = 201;
}

// Progress streams live, as Ollama's does: hashing and quantizing a large model take minutes.
// The stream opens with the first progress line, which comes once every check has passed
// (nothing is written before): a refused create is still a 4xx with a JSON error, and a
// failure after that is an error line in the stream. Quantization adds a line per tensor
// with `total` and `completed` (its status, the "quantizing ..." line's).
void serve_create(models::Store & store, const http::Request & req, http::Response & res, const json & body) {
    const bool             stream = opt_bool(body, "stream").value_or(true);
    http::ResponseStream * out    = nullptr;
    std::string            last_status;
    const auto send = [&](const json & line) {
        if (!stream) {
            if (req.client_gone()) throw Error(ErrorKind::cancelled, "the client went away");
            return;
        }
        if (!out) {
            res.status = 200;
            out        = &res.stream("application/x-ndjson");
        }
        if (!out->write(ndjson_line(line))) throw Error(ErrorKind::cancelled, "the client went away");
    };
    try {
        prepare::catalog_create(
            store, body,
            [&](const std::string & status) {
                if (status == "success") return; // sent below, once the create returned
                last_status = status;
                send({{"status", status}});
            },
            [&](uint64_t done, uint64_t total) { send(pull_progress_json(last_status, "", total, done)); });
    } catch (const std::exception & e) {
        if (!out) throw; // before the stream: the route's error answer
        const auto * err = dynamic_cast<const Error *>(&e);
        if (!err || err->kind() != ErrorKind::cancelled) out->write(ndjson_line(error_body(e.what())));
        return;
    }
    if (!stream) {
        send_json(res, 200, {{"status", "success"}});
        return;
    }
    send({{"status", "success"}});
}

} // namespace

void add_model_routes(http::Router & router, RouteContext ctx) {
    router.get("/api/tags", [ctx](http::Request &, http::Response & res) { send_json(res, 200, prepare::catalog_tags(ctx.store)); });
    router.post("/api/show", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        send_json(res, 200, prepare::catalog_show(ctx.store, model_name(body), opt_bool(body, "verbose").value_or(false)));
    }));
    router.post("/api/create", json_route([ctx](http::Request & req, http::Response & res, const json & body) {
        serve_create(ctx.store, req, res, body);
    }));
    router.post("/api/pull", json_route([ctx](http::Request & req, http::Response & res, const json & body) {
        serve_pull(ctx.store, req, res, body);
    }));
    router.post("/api/push", json_route([ctx](http::Request & req, http::Response & res, const json & body) {
        serve_push(ctx.store, req, res, body);
    }));
    router.del("/api/delete", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        prepare::catalog_delete(ctx.store, model_name(body));
        res.status = 200;
    }));
    router.post("/api/copy", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        prepare::catalog_copy(ctx.store, require_string(body, "source"), require_string(body, "destination"));
        res.status = 200;
    }));
    // HEAD is answered by the GET route, without the body: Ollama's `HEAD /api/blobs/<digest>`.
    router.get("/api/blobs/*", [ctx](http::Request & req, http::Response & res) {
        res.status = ctx.store.has_blob(req.params[0]) ? 200 : 404;
    });
    router.post("/api/blobs/*", [ctx](http::Request & req, http::Response & res) { upload_blob(ctx.store, req, res); },
                http::BodyMode::streamed);
}

} // namespace specd::api
