#pragma once
// What every request passes before its route, answered from its head alone (no body is read
// for a refused request, no handler thread is taken):
//   - the Host check of a loopback-bound server (DNS rebinding);
//   - the Origin check: a request from a browser page whose origin is not allowed is a 403
//     whatever its method (a page can send a text/plain POST without a preflight), as
//     Ollama's CORS layer does; preflights (OPTIONS) end here;
//   - the API key, when one is set (all but the health routes).
// And the shapes of every answer: CORS headers for allowed origins, refusals and handler
// exceptions as Ollama's {"error"} or, under /v1, OpenAI's error object.
#include "api/cors.h"
#include "api/server.h"
#include "http/router.h"

namespace specd::api {

void install_route_guard(http::Router & router, const ServerConfig & cfg, const CorsPolicy & cors);

} // namespace specd::api
