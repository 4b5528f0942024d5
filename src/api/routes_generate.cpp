// POST /api/generate and /api/chat: Ollama's generation routes.
#include "api/generation_route.h"
#include "api/http_json.h"
#include "api/ollama_response.h"

namespace specd::api {

void add_generate_routes(http::Router & router, RouteContext ctx) {
    const auto ollama_writer = [](bool chat) -> WriterFactory {
        return [chat](const std::string & model) { return std::make_unique<OllamaWriter>(model, chat); };
    };
    router.post("/api/generate", json_route([ctx, ollama_writer](http::Request & req, http::Response & res, json & body) {
        DecodedRequest d = decode_generate(body);
        body             = nullptr; // the prompt is in `d` now
        serve_generation(ctx, req, res, std::move(d), ollama_writer(false));
    }));
    router.post("/api/chat", json_route([ctx, ollama_writer](http::Request & req, http::Response & res, json & body) {
        DecodedRequest d = decode_chat(body);
        body             = nullptr; // the prompt is in `d` now
        serve_generation(ctx, req, res, std::move(d), ollama_writer(true));
    }));
}

} // namespace specd::api
