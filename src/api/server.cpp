#include "api/server.h"

#include "api/route_guard.h"
#include "api/routes.h"
#include "http/server.h"

#include <cstdio>
#include <utility>

namespace specd::api {

Server::Server(ServerConfig cfg, ServerParts parts) :
    cfg_(std::move(cfg)), parts_(std::move(parts)), cors_(cfg_.origins) {
    install_route_guard(router_, cfg_, cors_);
    RouteContext ctx{cfg_, parts_.store, parts_.scheduler, parts_.prompt_cache_stats};
    add_status_routes(router_, ctx);
    add_generate_routes(router_, ctx);
    add_openai_routes(router_, ctx);
    add_embed_routes(router_, ctx);
    add_model_routes(router_, ctx);
    add_dashboard_routes(router_, ctx);
    http_ = std::make_unique<http::Server>(router_, cfg_.limits);
}

Server::~Server() { stop(); }

void Server::stop() {
    // Work in flight is cancelled first, so that handlers waiting on it return; then the
    // transport closes every connection and waits for its handlers.
    parts_.scheduler.shutdown();
    if (http_) http_->stop();
}

void Server::bind() { http_->bind(cfg_.host, cfg_.port); }

void Server::listen() {
    std::fprintf(stderr, "specd %s listening on %s:%d\n", SPECD_VERSION, cfg_.host.c_str(), cfg_.port);
    http_->run();
}

} // namespace specd::api
