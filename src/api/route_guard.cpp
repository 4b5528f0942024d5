#include "api/route_guard.h"

#include "api/access.h"
#include "api/http_json.h"
#include "api/ollama_response.h"
#include "api/openai_response.h"

namespace specd::api {

namespace {

void refuse(const http::Request & req, http::Response & res, int status, const std::string & message) {
    send_json(res, status, refusal_body(req, status, message));
}

} // namespace

void install_route_guard(http::Router & router, const ServerConfig & cfg, const CorsPolicy & cors) {
    router.set_guard([&cfg, &cors](const http::Request & req, http::Response & res) {
        // A page on another site can make a browser send requests to 127.0.0.1 under a
        // name it controls (DNS rebinding): a loopback-bound server only answers local names.
        if (is_loopback(cfg.host) && !host_header_allowed(req.headers.get("Host"))) {
            refuse(req, res, 403, "forbidden: the Host header does not name this machine");
            return true;
        }
        const std::string origin = req.headers.get("Origin");
        if (!origin.empty() && !cors.allows(origin)) {
            refuse(req, res, 403, "forbidden: origin not allowed (SPECD_ORIGINS adds allowed origins)");
            return true;
        }
        if (req.method == "OPTIONS") {
            if (origin.empty()) {
                refuse(req, res, 403, "origin not allowed");
                return true;
            }
            res.status = 204;
            res.headers.set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS");
            res.headers.set("Access-Control-Allow-Headers", cors.allowed_headers(req.headers.get("Access-Control-Request-Headers")));
            res.headers.set("Access-Control-Max-Age", "43200");
            return true;
        }
        // Health checks ("/", the version) stay open: they say nothing about models or data;
        // so do the dashboard's page and assets (built into the binary), which ask for the
        // key and send it with the data requests they make.
        const bool open = req.path == "/" || req.path == "/api/version" || is_dashboard_asset(req.path);
        if (!cfg.api_key.empty() && !open && !api_key_matches(req.headers.get("Authorization"), cfg.api_key)) {
            res.headers.set("WWW-Authenticate", "Bearer");
            refuse(req, res, 401, "unauthorized: a valid API key is required (Authorization: Bearer ...)");
            return true;
        }
        return false;
    });

    // CORS: allowed origins get the headers on every answer, errors too.
    router.set_decorator([&cors](const http::Request & req, http::Response & res) {
        const std::string origin = req.headers.get("Origin");
        if (!origin.empty() && cors.allows(origin)) {
            res.headers.set("Access-Control-Allow-Origin", origin);
            res.headers.set("Vary", "Origin");
        }
    });

    router.set_error_writer([](const http::Request & req, int status, const std::string & message, http::Response & res) {
        refuse(req, res, status, message);
    });

    router.set_exception_mapper([](const http::Request & req, const std::exception & e, http::Response & res) {
        if (dynamic_cast<const http::BodyError *>(&e)) {
            refuse(req, res, 400, e.what());
        } else if (is_openai_route(req)) {
            const auto [status, body] = openai_error_of(e);
            send_json(res, status, body);
        } else if (const auto * err = dynamic_cast<const Error *>(&e)) {
            send_json(res, http_status(err->kind()), error_body(err->what()));
        } else {
            send_json(res, http_status(ErrorKind::internal), error_body(e.what()));
        }
    });
}

} // namespace specd::api
