#pragma once
// The routes, by family. Each add_* registers its family on the router; handlers run on the
// transport's handler threads, throw specd::Error for refusals (the route guard maps them to
// each API's error shape) and may block until their answer is done.
#include "api/server.h"
#include "http/router.h"

namespace specd::api {

// What handlers use; every member outlives the router.
struct RouteContext {
    const ServerConfig &                              cfg;
    models::Store &                                   store;
    scheduler::Scheduler &                            scheduler;
    const std::function<memory::PromptCacheStats()> & prompt_cache_stats;
};

// GET /, /api/version, /metrics, /api/debug/memory, /api/ps.
void add_status_routes(http::Router & router, RouteContext ctx);
// POST /api/generate, /api/chat.
void add_generate_routes(http::Router & router, RouteContext ctx);
// POST /v1/chat/completions, /v1/completions; GET /v1/models, /v1/models/{model}.
void add_openai_routes(http::Router & router, RouteContext ctx);
// POST /api/embed, /api/embeddings, /v1/embeddings.
void add_embed_routes(http::Router & router, RouteContext ctx);
// The store: /api/tags, show, create, copy, delete, pull, push, and blobs (HEAD, POST).
void add_model_routes(http::Router & router, RouteContext ctx);
// The dashboard: GET /ui (its page and assets) and /api/dashboard (what it charts).
void add_dashboard_routes(http::Router & router, RouteContext ctx);

} // namespace specd::api
