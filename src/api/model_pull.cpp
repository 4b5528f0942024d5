#include "api/model_pull.h"

#include "api/ollama_response.h"
#include "models/pull.h"

#include <httplib.h>

#include <memory>

namespace specd::api {

namespace {

// Lines reported before the stream starts wait in `pending`; then they go to the sink.
struct PullStream {
    std::string         pending;
    httplib::DataSink * sink = nullptr;
    bool                gone = false;
};

Error client_gone() { return Error(ErrorKind::cancelled, "the client went away"); }

} // namespace

json pull_progress_json(const std::string & status, const std::string & digest, uint64_t total, uint64_t completed) {
    json j = {{"status", status}};
    if (!digest.empty()) j["digest"] = digest;
    if (total > 0) j["total"] = total;
    if (completed > 0) j["completed"] = completed;
    return j;
}

void serve_pull(models::Store & store, const httplib::Request & req, httplib::Response & res, const json & body) {
    auto name = opt_string(body, "model");
    if (!name) name = opt_string(body, "name");
    if (!name || name->empty()) throw bad_request("model is required");
    const bool stream = opt_bool(body, "stream").value_or(true);

    models::PullOptions options;
    options.registry          = models::RegistryConfig::from_env();
    options.registry.insecure = opt_bool(body, "insecure").value_or(false);
    auto state                = std::make_shared<PullStream>();
    if (stream) {
        options.progress = [state](const models::PullProgress & p) {
            const std::string line = ndjson_line(pull_progress_json(p.status, p.digest, p.total, p.completed));
            if (!state->sink) {
                state->pending += line;
                return;
            }
            if (!state->sink->write(line.data(), line.size())) {
                state->gone = true;
                throw client_gone();
            }
        };
    } else {
        // Nothing is written until the end: only polling notices a client that left.
        options.progress = [&req](const models::PullProgress &) {
            if (req.is_connection_closed()) throw client_gone();
        };
    }
    auto pull = std::make_shared<models::Pull>(store, *name, std::move(options));
    pull->fetch_manifest(); // an unknown model or a bad manifest is still an HTTP status here

    if (!stream) {
        pull->run();
        res.status = 200;
        res.set_content(serialise({{"status", "success"}}), "application/json; charset=utf-8");
        return;
    }
    res.status = 200;
    res.set_chunked_content_provider("application/x-ndjson", [pull, state](size_t, httplib::DataSink & sink) {
        state->sink = &sink;
        if (!sink.write(state->pending.data(), state->pending.size())) return false;
        state->pending.clear();
        try {
            pull->run();
        } catch (const std::exception & e) {
            if (state->gone) return false;
            const std::string line = ndjson_line(error_body(e.what()));
            sink.write(line.data(), line.size());
        }
        state->sink = nullptr;
        sink.done();
        return true;
    });
}

} // namespace specd::api
