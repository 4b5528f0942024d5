// The OpenAI-compatible subset: the same requests as /api/chat and /api/generate (and the
// Responses API's, as a chat), answered in OpenAI's shapes (errors too: the route guard answers /v1 refusals in OpenAI's error shape).
// /v1/embeddings is with the other embedding routes (routes_embed.cpp).
#include "api/generation_route.h"
#include "api/http_json.h"
#include "api/openai_request.h"
#include "api/openai_response.h"
#include "api/responses_request.h"
#include "api/responses_response.h"

namespace specd::api {

void add_openai_routes(http::Router & router, RouteContext ctx) {
    const auto openai_writer = [](OpenAIEndpoint endpoint, bool include_usage) -> WriterFactory {
        return [=](const std::string & model) { return std::make_unique<OpenAIWriter>(endpoint, model, include_usage); };
    };
    router.post("/v1/chat/completions", json_route([ctx, openai_writer](http::Request & req, http::Response & res, json & body) {
        OpenAIRequest r = decode_openai_chat(body);
        body            = nullptr;
        serve_generation(ctx, req, res, std::move(r.decoded), openai_writer(OpenAIEndpoint::chat, r.include_usage));
    }));
    router.post("/v1/completions", json_route([ctx, openai_writer](http::Request & req, http::Response & res, json & body) {
        OpenAIRequest r = decode_openai_completion(body);
        body            = nullptr;
        serve_generation(ctx, req, res, std::move(r.decoded), openai_writer(OpenAIEndpoint::completion, r.include_usage));
    }));
    router.post("/v1/responses", json_route([ctx](http::Request & req, http::Response & res, json & body) {
        OpenAIRequest r = decode_openai_responses(body);
        body            = nullptr;
        serve_generation(ctx, req, res, std::move(r.decoded),
                         [](const std::string & model) { return std::make_unique<ResponsesWriter>(model); });
    }));
    router.get("/v1/models", [ctx](http::Request &, http::Response & res) { send_json(res, 200, openai_model_list(ctx.store)); });
    router.get("/v1/models/*", [ctx](http::Request & req, http::Response & res) {
        send_json(res, 200, openai_model(ctx.store, req.params[0]));
    });
}

} // namespace specd::api
