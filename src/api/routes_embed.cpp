// The embedding routes: /api/embed, the legacy /api/embeddings and OpenAI's /v1/embeddings.
// An embedding runs on the model's runner like a generation and is answered whole.
#include "api/embed_request.h"
#include "api/event_waiter.h"
#include "api/http_json.h"
#include "api/routes.h"
#include "prepare/generation.h"

#include <utility>

namespace specd::api {

namespace {

void serve_embed(const RouteContext & ctx, const http::Request & req, http::Response & res, EmbedRequest e) {
    prepare::prepare_embedding(ctx.store, ctx.cfg.preparation, e.model, e.options, e.request);
    auto        job = ctx.scheduler.submit(std::move(e.request), /*streamed=*/false);
    EventWaiter waiter(*job, req);
    for (auto ev = waiter.next(); ev; ev = waiter.next()) {
        // Thrown, so that each route's error shape applies.
        if (ev->kind == scheduler::Event::Kind::error) throw Error(ev->error, ev->text);
        if (ev->kind == scheduler::Event::Kind::done) {
            send_json(res, 200, embed_answer_json(e, std::move(ev->done)));
            return;
        }
    }
}

} // namespace

void add_embed_routes(http::Router & router, RouteContext ctx) {
    router.post("/api/embed", json_route([ctx](http::Request & req, http::Response & res, json & body) {
        EmbedRequest e = decode_embed(body);
        body           = nullptr;
        serve_embed(ctx, req, res, std::move(e));
    }));
    router.post("/api/embeddings", json_route([ctx](http::Request & req, http::Response & res, json & body) {
        EmbedRequest e = decode_embeddings_legacy(body);
        body           = nullptr;
        serve_embed(ctx, req, res, std::move(e));
    }));
    router.post("/v1/embeddings", json_route([ctx](http::Request & req, http::Response & res, json & body) {
        EmbedRequest e = decode_openai_embed(body);
        body           = nullptr;
        serve_embed(ctx, req, res, std::move(e));
    }));
}

} // namespace specd::api
