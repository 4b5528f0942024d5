#include "api/server.h"

#include "api/access.h"
#include "api/chat_answer.h"
#include "api/embed_request.h"
#include "api/json_input.h"
#include "api/ollama_request.h"
#include "api/ollama_response.h"
#include "api/openai_request.h"
#include "api/openai_response.h"
#include "api/model_catalog.h"
#include "api/model_pull.h"
#include "api/memory_report.h"
#include "memory/ledger.h"
#include "metrics/registry.h"

#include <httplib.h>

#include <cstdio>

namespace specd::api {

namespace {

constexpr auto k_poll = std::chrono::milliseconds(100);

void send_json(httplib::Response & res, int status, const json & body) {
    res.status = status;
    res.set_content(serialise(body), "application/json; charset=utf-8");
}

void send_error(httplib::Response & res, ErrorKind kind, const std::string & message) {
    send_json(res, http_status(kind), error_body(message));
}

// /v1 is OpenAI's API: its refusals, access checks included, are in OpenAI's error shape.
bool is_openai_route(const httplib::Request & req) { return req.path.rfind("/v1/", 0) == 0; }

json refusal_body(const httplib::Request & req, int status, const std::string & message) {
    return is_openai_route(req) ? openai_error_json(status, message) : error_body(message);
}

// Blob uploads stream to disk whatever their size; every other body is read into memory
// whole, so it is capped at max_body_bytes.
bool is_blob_upload(const httplib::Request & req) {
    return req.method == "POST" && req.path.rfind("/api/blobs/", 0) == 0;
}

void send_body_too_large(const httplib::Request & req, httplib::Response & res, size_t max_body_bytes) {
    send_json(res, 413, refusal_body(req, 413, "request body is larger than " + std::to_string(max_body_bytes) +
                                                   " bytes (the limit, SPECD_MAX_BODY)"));
}

// A request httplib cannot parse (headers, URI) is answered by httplib itself, and only its
// error logger is told why: the reason is kept here for the error handler, which runs next,
// on the same thread, for the same request.
thread_local const httplib::Request * t_refused_request = nullptr;
thread_local httplib::Error           t_refused_why     = httplib::Error::Success;

std::string refusal_message(httplib::Error why) {
    switch (why) {
        case httplib::Error::InvalidHeaders:
            return "invalid request headers (at most " + std::to_string(CPPHTTPLIB_HEADER_MAX_COUNT) +
                   " header fields, each line at most " + std::to_string(CPPHTTPLIB_HEADER_MAX_LENGTH) + " bytes)";
        // llama.cpp builds cpp-httplib with its own URI limit (32768, not this header's
        // CPPHTTPLIB_REQUEST_URI_MAX_LENGTH), and a request line over 32 KiB is dropped unanswered
        // before this check: the number here would be wrong, so it is left out.
        case httplib::Error::ExceedUriMaxLength: return "request URI is too long";
        case httplib::Error::InvalidRequestLine: return "invalid HTTP request line";
        case httplib::Error::HTTPParsing:        return "invalid Accept header";
        default:                                 return "";
    }
}

// Waits for the job's next event, cancelling it if the client goes away meanwhile. The
// client is checked every k_poll even while events keep coming (a non-streaming answer
// never writes until the end, so only this check notices a client that left).
class EventWaiter {
  public:
    EventWaiter(scheduler::Job & job, std::function<bool()> client_gone) :
        job_(job), client_gone_(std::move(client_gone)), next_check_(std::chrono::steady_clock::now() + k_poll) {}

    std::optional<scheduler::Event> next() {
        for (;;) {
            auto e = job_.events.pop(k_poll);
            if (std::chrono::steady_clock::now() >= next_check_) {
                next_check_ = std::chrono::steady_clock::now() + k_poll;
                if (client_gone_()) {
                    job_.cancel = true;
                    return std::nullopt;
                }
            }
            if (e) return e;
        }
    }

  private:
    scheduler::Job &                      job_;
    std::function<bool()>                 client_gone_;
    std::chrono::steady_clock::time_point next_check_;
};

} // namespace

Server::Server(ServerConfig cfg) :
    cfg_(std::move(cfg)), store_(cfg_.models_dir),
    prompt_cache_(cfg_.prompt_cache_bytes, memory::process_ledger()), scheduler_(cfg_.scheduler, &prompt_cache_), cors_(cfg_.origins), http_(std::make_unique<httplib::Server>()) {
    register_routes();
}

Server::~Server() { stop(); }

void Server::stop() {
    // Work in flight is cancelled first: connection threads waiting on it can then finish,
    // which the HTTP server's own shutdown waits for.
    scheduler_.shutdown();
    if (http_) http_->stop();
}

void Server::bind() {
    if (!http_->bind_to_port(cfg_.host, cfg_.port)) {
        throw std::runtime_error("cannot listen on " + cfg_.host + ":" + std::to_string(cfg_.port) +
                                 " (address in use or not available)");
    }
}

void Server::listen() {
    std::fprintf(stderr, "specd %s listening on %s:%d\n", SPECD_VERSION, cfg_.host.c_str(), cfg_.port);
    http_->listen_after_bind();
}

void Server::register_routes() {
    auto & s = *http_;
    s.new_task_queue = [] { return new httplib::ThreadPool(8, 1024); };
    // Blob uploads can be large and stream to disk; every other body is capped below
    // (pre-routing by Content-Length, json_route as a chunked body arrives).
    s.set_payload_max_length(std::numeric_limits<size_t>::max());
    s.set_error_logger([](const httplib::Error & why, const httplib::Request * req) {
        if (req && !refusal_message(why).empty()) {
            t_refused_request = req;
            t_refused_why     = why;
        }
    });
    // `curl -d @big.json` asks before it sends: an oversized body is refused unsent.
    s.set_expect_100_continue_handler([this](const httplib::Request & req, httplib::Response & res) {
        if (is_blob_upload(req) || req.get_header_value_u64("Content-Length") <= cfg_.max_body_bytes) return 100;
        send_body_too_large(req, res, cfg_.max_body_bytes);
        return 413;
    });
    s.set_pre_routing_handler([this](const httplib::Request & req, httplib::Response & res) {
        t_refused_request = nullptr;
        // A page on another site can make a browser send requests to 127.0.0.1 under a
        // name it controls (DNS rebinding): a loopback-bound server only answers local names.
        if (is_loopback(cfg_.host) && !host_header_allowed(req.get_header_value("Host"))) {
            send_json(res, 403, refusal_body(req, 403, "forbidden: the Host header does not name this machine"));
            return httplib::Server::HandlerResponse::Handled;
        }
        // Health checks ("/", the version) stay open: they say nothing about models or data.
        const bool health = req.path == "/" || req.path == "/api/version";
        if (!cfg_.api_key.empty() && req.method != "OPTIONS" && !health &&
            !api_key_matches(req.get_header_value("Authorization"), cfg_.api_key)) {
            res.set_header("WWW-Authenticate", "Bearer");
            send_json(res, 401, refusal_body(req, 401, "unauthorized: a valid API key is required (Authorization: Bearer ...)"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (is_blob_upload(req)) return httplib::Server::HandlerResponse::Unhandled;
        if (req.get_header_value_u64("Content-Length") > cfg_.max_body_bytes) {
            send_body_too_large(req, res, cfg_.max_body_bytes);
            return httplib::Server::HandlerResponse::Handled;
        }
        // A chunked body has no length to check here: the JSON routes (POST, DELETE) count
        // it as it arrives (json_route), but httplib would buffer one sent to any other route
        // without a limit.
        if (req.has_header("Transfer-Encoding") && req.method != "POST" && req.method != "DELETE") {
            send_json(res, 411, refusal_body(req, 411, "a chunked request body is only accepted by POST and DELETE routes"));
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    s.set_exception_handler([](const httplib::Request & req, httplib::Response & res, std::exception_ptr ep) {
        try {
            std::rethrow_exception(ep);
        } catch (const std::exception & e) {
            if (is_openai_route(req)) {
                const auto [status, body] = openai_error_of(e);
                send_json(res, status, body);
            } else if (const auto * err = dynamic_cast<const Error *>(&e)) {
                send_error(res, err->kind(), err->what());
            } else {
                send_error(res, ErrorKind::internal, e.what());
            }
        }
    });
    s.set_error_handler([](const httplib::Request & req, httplib::Response & res) {
        const std::string refused = t_refused_request == &req ? refusal_message(t_refused_why) : "";
        t_refused_request         = nullptr;
        if (!refused.empty()) {
            send_json(res, res.status, refusal_body(req, res.status, refused));
        } else if (res.body.empty()) {
            send_json(res, res.status, refusal_body(req, res.status, res.status == 404 ? "not found" : httplib::status_message(res.status)));
        }
    });

    // CORS: allowed origins get the headers (on every answer, errors too); preflights end here.
    s.set_post_routing_handler([this](const httplib::Request & req, httplib::Response & res) {
        const auto origin = req.get_header_value("Origin");
        if (!origin.empty() && cors_.allows(origin)) {
            res.set_header("Access-Control-Allow-Origin", origin);
            res.set_header("Vary", "Origin");
        }
    });
    s.Options(".*", [this](const httplib::Request & req, httplib::Response & res) {
        const auto origin = req.get_header_value("Origin");
        if (origin.empty() || !cors_.allows(origin)) {
            send_json(res, 403, refusal_body(req, 403, "origin not allowed"));
            return;
        }
        res.set_header("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, User-Agent, Accept, X-Requested-With");
        res.status = 204;
    });

    s.Get("/", [](const httplib::Request &, httplib::Response & res) { res.set_content("Ollama is running", "text/plain"); });
    s.Get("/metrics", [this](const httplib::Request &, httplib::Response & res) {
        res.set_content(metrics::server_metrics().exposition() +
                            memory_metrics(memory::process_ledger().snapshot(), prompt_cache_.stats()),
                        "text/plain; version=0.0.4");
    });
    s.Get("/api/debug/memory", [this](const httplib::Request &, httplib::Response & res) {
        send_json(res, 200, memory_debug_json(memory::process_ledger().snapshot(), prompt_cache_.stats()));
    });
    s.Get("/api/version", [](const httplib::Request &, httplib::Response & res) {
        send_json(res, 200, {{"version", SPECD_VERSION}});
    });

    // JSON endpoints read their body here, counted against max_body_bytes as it arrives (a
    // Content-Length over the limit was refused before routing; a chunked body has none).
    using JsonHandler = std::function<void(const httplib::Request &, httplib::Response &, const json &)>;
    const auto json_route = [this](JsonHandler handle) {
        return [this, handle = std::move(handle)](const httplib::Request & req, httplib::Response & res,
                                                  const httplib::ContentReader & content) {
            std::string body;
            bool        too_large = false;
            const bool  read      = content([&](const char * data, size_t n) {
                too_large = n > cfg_.max_body_bytes - body.size();
                if (!too_large) body.append(data, n);
                return !too_large;
            });
            if (too_large) {
                send_body_too_large(req, res, cfg_.max_body_bytes);
                return;
            }
            if (!read) throw bad_request("the request body could not be read (bad framing or an unsupported Content-Encoding)");
            handle(req, res, parse_body(body));
        };
    };

    const auto ollama_writer = [](bool chat) -> WriterFactory {
        return [chat](const std::string & model) { return std::make_unique<OllamaWriter>(model, chat); };
    };
    s.Post("/api/generate", json_route([this, ollama_writer](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_generation(req, res, decode_generate(body), ollama_writer(false));
    }));
    s.Post("/api/chat", json_route([this, ollama_writer](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_generation(req, res, decode_chat(body), ollama_writer(true));
    }));

    // The OpenAI-compatible subset: the same requests as /api/chat and /api/generate, answered
    // in OpenAI's shapes (errors too: see is_openai_route).
    const auto openai_writer = [](OpenAIEndpoint endpoint, bool include_usage) -> WriterFactory {
        return [=](const std::string & model) { return std::make_unique<OpenAIWriter>(endpoint, model, include_usage); };
    };
    s.Post("/v1/chat/completions", json_route([this, openai_writer](const httplib::Request & req, httplib::Response & res, const json & body) {
        OpenAIRequest r = decode_openai_chat(body);
        serve_generation(req, res, std::move(r.decoded), openai_writer(OpenAIEndpoint::chat, r.include_usage));
    }));
    s.Post("/v1/completions", json_route([this, openai_writer](const httplib::Request & req, httplib::Response & res, const json & body) {
        OpenAIRequest r = decode_openai_completion(body);
        serve_generation(req, res, std::move(r.decoded), openai_writer(OpenAIEndpoint::completion, r.include_usage));
    }));
    s.Get("/v1/models", [this](const httplib::Request &, httplib::Response & res) {
        send_json(res, 200, openai_model_list(store_));
    });
    s.Get(R"(/v1/models/(.+))", [this](const httplib::Request & req, httplib::Response & res) {
        send_json(res, 200, openai_model(store_, req.matches[1].str()));
    });
    // Embeddings run on the model's runner like a generation, answered whole (no streaming);
    // errors are thrown, so that each route's error shape applies.
    const auto serve_embed = [this](const httplib::Request & req, httplib::Response & res, EmbedRequest e) {
        const ServedModel m = catalog_resolve(store_, e.model);
        e.request.model           = m.files;
        e.request.context.num_ctx = cfg_.default_num_ctx;
        apply_options(m.params, e.options, e.request);
        auto        job = scheduler_.submit(std::move(e.request));
        EventWaiter waiter(*job, [&req] { return req.is_connection_closed(); });
        for (auto ev = waiter.next(); ev; ev = waiter.next()) {
            if (ev->kind == scheduler::Event::Kind::error) throw Error(ev->error, ev->text);
            if (ev->kind == scheduler::Event::Kind::done) {
                send_json(res, 200, embed_answer_json(e, std::move(ev->done)));
                return;
            }
        }
    };
    s.Post("/api/embed", json_route([serve_embed](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_embed(req, res, decode_embed(body));
    }));
    s.Post("/api/embeddings", json_route([serve_embed](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_embed(req, res, decode_embeddings_legacy(body));
    }));
    s.Post("/v1/embeddings", json_route([serve_embed](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_embed(req, res, decode_openai_embed(body));
    }));
    s.Get("/api/tags", [this](const httplib::Request &, httplib::Response & res) {
        send_json(res, 200, catalog_tags(store_));
    });
    s.Post("/api/show", json_route([this](const httplib::Request &, httplib::Response & res, const json & body) {
        auto name = opt_string(body, "model");
        if (!name) name = opt_string(body, "name");
        if (!name || name->empty()) throw bad_request("model is required");
        send_json(res, 200, catalog_show(store_, *name));
    }));
    s.Get("/api/ps", [this](const httplib::Request &, httplib::Response & res) {
        json       models = json::array();
        const auto ledger = memory::process_ledger().snapshot();
        for (const auto & m : scheduler_.loaded()) {
            // What the model holds, by bucket; `size` is all of it, as Ollama's counts the KV too.
            memory::BucketBytes buckets{};
            for (const auto & mb : ledger.models) {
                if (mb.owner.id == m.memory_owner) buckets = mb.buckets;
            }
            json breakdown = bucket_json(buckets);
            const uint64_t size = std::max<uint64_t>(m.size_bytes, breakdown["total"].get<uint64_t>());
            json j = {{"name", m.name}, {"model", m.name}, {"size", size}, {"size_vram", 0},
                      {"digest", bare_digest(m.digest)}, {"context_length", m.context_length},
                      {"details", {{"parent_model", ""}, {"format", "gguf"}, {"family", m.family}, {"families", json::array({m.family})},
                                   {"parameter_size", m.parameter_size}, {"quantization_level", m.quantization_level}}}};
            // Ollama shows a far-future time for models kept forever.
            j["expires_at"] = m.expires_at ? format_time(*m.expires_at) : "2318-01-01T00:00:00Z";
            j["parallel"]   = m.parallel; // specd's: sequences decoded together (continuous batching)
            j["threads"]    = {{"decode", m.threads}, {"batch", m.threads_batch}, {"draft", m.draft_threads}};
            j["memory"]     = std::move(breakdown);
            models.push_back(std::move(j));
        }
        send_json(res, 200, {{"models", models}});
    });
    s.Post("/api/create", json_route([this](const httplib::Request &, httplib::Response & res, const json & body) {
        const bool stream = opt_bool(body, "stream").value_or(true);
        // Creating hashes files: quick for these sizes, so progress is collected and sent
        // after the fact rather than streamed live.
        std::string lines;
        catalog_create(store_, body, [&](const std::string & status) { lines += ndjson_line({{"status", status}}); });
        if (!stream) {
            send_json(res, 200, {{"status", "success"}});
            return;
        }
        lines += ndjson_line({{"status", "success"}});
        res.set_content(lines, "application/x-ndjson");
    }));
    // httplib answers HEAD with the GET handler (headers only), as Ollama's HEAD /api/blobs needs.
    s.Get(R"(/api/blobs/(.+))", [this](const httplib::Request & req, httplib::Response & res) {
        res.status = store_.has_blob(req.matches[1].str()) ? 200 : 404;
    });
    s.Post(R"(/api/blobs/(.+))", [this](const httplib::Request & req, httplib::Response & res,
                                         const httplib::ContentReader & content) {
        const std::string digest = req.matches[1].str();
        (void) store_.blob_path(digest); // a bad digest is a 400 before any byte is stored
        if (store_.has_blob(digest)) {
            content([](const char *, size_t) { return true; });
            res.status = 200;
            return;
        }
        models::Store::WriteGuard guard(store_);
        auto writer = store_.begin_blob();
        content([&](const char * data, size_t len) {
            writer.write(data, len);
            return true;
        });
        writer.commit(digest);
        res.status = 201;
    });
    s.Post("/api/pull", json_route([this](const httplib::Request & req, httplib::Response & res, const json & body) {
        serve_pull(store_, req, res, body);
    }));
    s.Delete("/api/delete", json_route([this](const httplib::Request &, httplib::Response & res, const json & body) {
        auto name = opt_string(body, "model");
        if (!name) name = opt_string(body, "name");
        if (!name || name->empty()) throw bad_request("model is required");
        catalog_delete(store_, *name);
        res.status = 200;
    }));
    s.Post("/api/copy", json_route([this](const httplib::Request &, httplib::Response & res, const json & body) {
        catalog_copy(store_, require_string(body, "source"), require_string(body, "destination"));
        res.status = 200;
    }));
}

void Server::serve_generation(const httplib::Request & req, httplib::Response & res, DecodedRequest d,
                              const WriterFactory & make_writer) {
    const ServedModel m = catalog_resolve(store_, d.model);
    if (!m.files.projector && !d.request.prompt.all_images().empty()) {
        throw bad_request("model \"" + m.files.name + "\" does not support images (it has no vision projector)");
    }
    d.request.model       = m.files;
    if (d.request.prompt.kind == PromptSpec::Kind::chat && !d.request.load_only && !m.messages.empty()) {
        // As Ollama: the model's MESSAGEs are the start of every conversation with it.
        auto & messages = d.request.prompt.messages;
        messages.insert(messages.begin(), m.messages.begin(), m.messages.end());
    }
    d.request.context.num_ctx = cfg_.default_num_ctx;
    apply_options(m.params, d.options, d.request);
    if (cfg_.no_draft) d.request.generate.draft_num_predict = 0;
    if (cfg_.unseeded_rejection && d.request.generate.sampling.seed < 0) d.request.generate.rejection_sampling = true;
    auto reader = std::make_shared<AnswerReader>(prepare_answer(d));

    std::shared_ptr<GenerationWriter> writer = make_writer(m.files.name);
    auto        job = scheduler_.submit(std::move(d.request));
    EventWaiter waiter(*job, [&req] { return req.is_connection_closed(); });
    auto        first = waiter.next();
    if (!first) return; // the client left; its job is cancelled
    if (first->kind == scheduler::Event::Kind::error) {
        send_json(res, http_status(first->error), writer->error_json(first->error, first->text));
        return;
    }

    if (!d.stream) {
        AnswerPart                answer;
        std::vector<TokenLogprob> logprobs;
        std::optional<scheduler::Event> e = std::move(first);
        for (; e; e = waiter.next()) {
            if (e->kind == scheduler::Event::Kind::text) {
                answer.append(reader->push(e->text));
                logprobs.insert(logprobs.end(), e->logprobs.begin(), e->logprobs.end());
                continue;
            }
            if (e->kind == scheduler::Event::Kind::error) {
                send_json(res, http_status(e->error), writer->error_json(e->error, e->text));
                return;
            }
            answer.append(reader->finish());
            send_json(res, 200, writer->answer_json(answer, e->done, logprobs));
            return;
        }
        return;
    }

    res.status = 200;
    auto pending = std::make_shared<std::optional<scheduler::Event>>(std::move(first));
    res.set_chunked_content_provider(
        writer->stream_content_type(),
        [job, pending, writer, reader](size_t, httplib::DataSink & sink) {
            std::optional<scheduler::Event> e = std::move(*pending);
            pending->reset();
            if (!e) e = job->events.pop(k_poll);
            if (!e) {
                if (!sink.is_writable()) { job->cancel = true; return false; }
                return true;
            }
            std::string out;
            bool        last = false;
            switch (e->kind) {
                case scheduler::Event::Kind::text: {
                    // Text held back (a tag not yet complete) goes out with a later piece;
                    // logprobs are never held back.
                    const AnswerPart part = reader->push(e->text);
                    if (!part.empty() || !e->logprobs.empty() || e->text.empty()) out = writer->chunk_text(part, e->logprobs);
                    break;
                }
                case scheduler::Event::Kind::done: {
                    if (const AnswerPart rest = reader->finish(); !rest.empty()) out = writer->chunk_text(rest);
                    out += writer->chunk_done(e->done);
                    last = true;
                    break;
                }
                case scheduler::Event::Kind::error: out = writer->chunk_error(e->error, e->text); last = true; break;
            }
            if (!out.empty() && !sink.write(out.data(), out.size())) { job->cancel = true; return false; }
            if (last) sink.done();
            return true;
        },
        [job](bool success) {
            if (!success) job->cancel = true;
        });
}

} // namespace specd::api
