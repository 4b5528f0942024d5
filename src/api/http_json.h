#pragma once
// JSON in and out of the transport's requests and answers.
#include "core/json_input.h"
#include "http/request.h"
#include "http/response.h"
#include "http/router.h"

#include <functional>

namespace specd::api {

void send_json(http::Response & res, int status, const json & body);

// /v1 is OpenAI's API: its refusals, access checks included, are in OpenAI's error shape.
bool is_openai_route(const http::Request & req);
// The body of a refusal in the shape of the request's API.
json refusal_body(const http::Request & req, int status, const std::string & message);

// A route that takes a JSON object body (read whole by the transport, within the body limit).
// The body's bytes are freed once parsed; the handler may empty the JSON once it has what it
// needs (a generation's prompt), so that a big body is not held twice while the request runs.
using JsonHandler = std::function<void(http::Request &, http::Response &, json & body)>;
http::Handler json_route(JsonHandler handle);

} // namespace specd::api
