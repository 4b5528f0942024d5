#pragma once
// POST /api/pull and POST /api/push: {model, insecure?, stream?}. The name is checked and the
// registry asked first (a pull fetches the manifest; a push reads the local one and asks which
// blobs the registry has), so a bad name is a 400, an unknown model a 404 and a registry that
// cannot be reached or fails a push a 502 before the answer starts. Then Ollama's status lines
// stream as NDJSON (a failure after that is a last {"error"} line), or one
// {"status":"success"} object with stream false. A client that goes away cancels the transfer
// (a pull keeps its partial downloads for the next one).
#include "core/json_input.h"
#include "http/request.h"
#include "http/response.h"
#include "models/store.h"

namespace specd::api {

// One status line as Ollama writes it (digest, total and completed left out when empty).
json pull_progress_json(const std::string & status, const std::string & digest, uint64_t total, uint64_t completed);

void serve_pull(models::Store & store, const http::Request & req, http::Response & res, const json & body);
void serve_push(models::Store & store, const http::Request & req, http::Response & res, const json & body);

} // namespace specd::api
