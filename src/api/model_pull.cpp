#include "api/model_pull.h"

#include "api/ollama_response.h"
#include "models/pull.h"

namespace specd::api {

namespace {

Error client_gone() { return Error(ErrorKind::cancelled, "the client went away"); }

} // namespace

json pull_progress_json(const std::string & status, const std::string & digest, uint64_t total, uint64_t completed) {
    json j = {{"status", status}};
    if (!digest.empty()) j["digest"] = digest;
    if (total > 0) j["total"] = total;
    if (completed > 0) j["completed"] = completed;
    return j;
}

void serve_pull(models::Store & store, const http::Request & req, http::Response & res, const json & body) {
    auto name = opt_string(body, "model");
    if (!name) name = opt_string(body, "name");
    if (!name || name->empty()) throw bad_request("model is required");
    const bool stream = opt_bool(body, "stream").value_or(true);

    // Lines reported before the answer starts wait in `pending`; then they are written as
    // they come, and a failed write ends the pull.
    std::string              pending;
    http::ResponseStream *   out  = nullptr;
    bool                     gone = false;
    models::PullOptions      options;
    options.registry          = models::RegistryConfig::from_env();
    options.registry.insecure = opt_bool(body, "insecure").value_or(false);
    if (stream) {
        options.progress = [&](const models::PullProgress & p) {
            const std::string line = ndjson_line(pull_progress_json(p.status, p.digest, p.total, p.completed));
            if (!out) {
                pending += line;
                return;
            }
            if (!out->write(line)) {
                gone = true;
                throw client_gone();
            }
        };
    } else {
        // Nothing is written until the end: only polling notices a client that left.
        options.progress = [&req](const models::PullProgress &) {
            if (req.client_gone()) throw client_gone();
        };
    }
    models::Pull pull(store, *name, std::move(options));
    pull.fetch_manifest(); // an unknown model or a bad manifest is still an HTTP status here

    if (!stream) {
        pull.run();
        res.status = 200;
        res.set_content(serialise({{"status", "success"}}), "application/json; charset=utf-8");
        return;
    }
    res.status = 200;
    out        = &res.stream("application/x-ndjson");
    if (!out->write(pending)) return;
    try {
        pull.run();
    } catch (const std::exception & e) {
        if (!gone) out->write(ndjson_line(error_body(e.what())));
    }
}

} // namespace specd::api
