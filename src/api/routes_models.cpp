// The model store over HTTP: list, show, create, copy, delete, pull, push, and the blobs that
// `specd create` uploads before it creates a model on a remote server.
#include "api/http_json.h"
#include "api/model_catalog.h"
#include "api/model_transfer.h"
#include "api/ollama_response.h"
#include "api/routes.h"

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

} // namespace

void add_model_routes(http::Router & router, RouteContext ctx) {
    router.get("/api/tags", [ctx](http::Request &, http::Response & res) { send_json(res, 200, catalog_tags(ctx.store)); });
    router.post("/api/show", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        send_json(res, 200, catalog_show(ctx.store, model_name(body)));
    }));
    router.post("/api/create", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        const bool stream = opt_bool(body, "stream").value_or(true);
        // Creating hashes files: quick for these sizes, so progress is collected and sent
        // after the fact rather than streamed live.
        std::string lines;
        catalog_create(ctx.store, body, [&](const std::string & status) { lines += ndjson_line({{"status", status}}); });
        if (!stream) {
            send_json(res, 200, {{"status", "success"}});
            return;
        }
        lines += ndjson_line({{"status", "success"}});
        res.set_content(std::move(lines), "application/x-ndjson");
    }));
    router.post("/api/pull", json_route([ctx](http::Request & req, http::Response & res, const json & body) {
        serve_pull(ctx.store, req, res, body);
    }));
    router.post("/api/push", json_route([ctx](http::Request & req, http::Response & res, const json & body) {
        serve_push(ctx.store, req, res, body);
    }));
    router.del("/api/delete", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        catalog_delete(ctx.store, model_name(body));
        res.status = 200;
    }));
    router.post("/api/copy", json_route([ctx](http::Request &, http::Response & res, const json & body) {
        catalog_copy(ctx.store, require_string(body, "source"), require_string(body, "destination"));
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
