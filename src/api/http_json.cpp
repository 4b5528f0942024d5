#include "api/http_json.h"

#include "api/ollama_response.h"
#include "api/openai_response.h"
#include "prepare/prompt_size.h"

namespace specd::api {

void send_json(http::Response & res, int status, const json & body) {
    res.status = status;
    res.set_content(serialise(body), "application/json; charset=utf-8");
}

bool is_openai_route(const http::Request & req) { return req.path.rfind("/v1/", 0) == 0; }

json refusal_body(const http::Request & req, int status, const std::string & message) {
    return is_openai_route(req) ? openai_error_json(status, message) : error_body(message);
}

http::Handler json_route(JsonHandler handle) {
    return [handle = std::move(handle)](http::Request & req, http::Response & res) {
        // Parsing holds a string two or three times over: a body with more prompt text than
        // any request may bring is refused before that.
        if (req.body.size() > prepare::k_max_prompt_text_limit) prepare::check_raw_prompt_text(req.body);
        json body = parse_body(req.body);
        std::string().swap(req.body); // the parsed JSON has it all
        handle(req, res, body);
    };
}

} // namespace specd::api
