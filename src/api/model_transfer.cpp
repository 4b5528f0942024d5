#include "api/model_transfer.h"

#include "api/ollama_response.h"
#include "models/pull.h"
#include "models/push.h"

#include <functional>

namespace specd::api {

namespace {

Error client_gone() { return Error(ErrorKind::cancelled, "the client went away"); }

struct TransferRequest {
    std::string            name;
    bool                   stream = true;
    models::RegistryConfig registry;
};

TransferRequest transfer_request(const json & body) {
    TransferRequest r;
    auto            name = opt_string(body, "model");
    if (!name) name = opt_string(body, "name");
    if (!name || name->empty()) throw bad_request("model is required");
    r.name              = *name;
    r.stream            = opt_bool(body, "stream").value_or(true);
    r.registry          = models::RegistryConfig::from_env();
    r.registry.insecure = opt_bool(body, "insecure").value_or(false);
    return r;
}

// The answer of a pull or a push: status lines reported before it starts wait in `pending`;
// then they are written as they come, and a failed write ends the transfer.
class TransferAnswer {
  public:
    TransferAnswer(const http::Request & req, bool stream) : req_(req), stream_(stream) {}

    // The progress callback the transfer reports to.
    std::function<void(const models::PullProgress &)> progress() {
        if (!stream_) {
            // Nothing is written until the end: only polling notices a client that left.
            return [this](const models::PullProgress &) {
                if (req_.client_gone()) throw client_gone();
            };
        }
        return [this](const models::PullProgress & p) {
            const std::string line = ndjson_line(pull_progress_json(p.status, p.digest, p.total, p.completed));
            if (!out_) {
                pending_ += line;
                return;
            }
            if (!out_->write(line)) {
                gone_ = true;
                throw client_gone();
            }
        };
    }

    // Runs the rest of the transfer once its preflight passed, and answers.
    void finish(http::Response & res, const std::function<void()> & rest) {
        res.status = 200;
        if (!stream_) {
            rest();
            res.set_content(serialise({{"status", "success"}}), "application/json; charset=utf-8");
            return;
        }
        out_ = &res.stream("application/x-ndjson");
        if (!out_->write(pending_)) return;
        try {
            rest();
        } catch (const std::exception & e) {
            if (!gone_) out_->write(ndjson_line(error_body(e.what())));
        }
    }

  private:
    const http::Request &  req_;
    bool                   stream_;
    std::string            pending_;
    http::ResponseStream * out_  = nullptr;
    bool                   gone_ = false;
};

} // namespace

json pull_progress_json(const std::string & status, const std::string & digest, uint64_t total, uint64_t completed) {
    json j = {{"status", status}};
    if (!digest.empty()) j["digest"] = digest;
    if (total > 0) j["total"] = total;
    if (completed > 0) j["completed"] = completed;
    return j;
}

void serve_pull(models::Store & store, const http::Request & req, http::Response & res, const json & body) {
    const TransferRequest r = transfer_request(body);
    TransferAnswer        answer(req, r.stream);
    models::PullOptions   options;
    options.registry = r.registry;
    options.progress = answer.progress();
    models::Pull pull(store, r.name, std::move(options));
    pull.fetch_manifest(); // an unknown model or a bad manifest is still an HTTP status here
    answer.finish(res, [&] { pull.run(); });
}

void serve_push(models::Store & store, const http::Request & req, http::Response & res, const json & body) {
    const TransferRequest r = transfer_request(body);
    TransferAnswer        answer(req, r.stream);
    models::PushOptions   options;
    options.registry = r.registry;
    options.progress = answer.progress();
    models::Push push(store, r.name, std::move(options));
    push.prepare(); // an unknown model or a registry that cannot be reached is still an HTTP status
    answer.finish(res, [&] { push.run(); });
}

} // namespace specd::api
