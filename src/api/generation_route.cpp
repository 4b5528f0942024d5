#include "api/generation_route.h"

#include "api/event_waiter.h"
#include "api/http_json.h"
#include "api/ollama_response.h"
#include "prepare/generation.h"

#include <utility>

namespace specd::api {

namespace {

// The rest of a streamed answer, event by event, from `first` on. Returns when the answer is
// done, failed, or its client is gone (the job is then cancelled).
void stream_events(http::ResponseStream & out, scheduler::Job & job, const http::Request & req,
                   scheduler::Event first, GenerationWriter & writer, prepare::AnswerReader & reader) {
    std::optional<scheduler::Event> e = std::move(first);
    for (;;) {
        if (!e) e = job.events.pop(k_poll);
        if (!e) {
            if (req.client_gone()) {
                job.cancel = true;
                return;
            }
            continue;
        }
        std::string text;
        bool        last = false;
        switch (e->kind) {
            case scheduler::Event::Kind::text: {
                // Text held back (a tag not yet complete) goes out with a later piece;
                // logprobs are never held back.
                const AnswerPart part = reader.push(e->text);
                if (!part.empty() || !e->logprobs.empty() || e->text.empty()) text = writer.chunk_text(part, e->logprobs);
                break;
            }
            case scheduler::Event::Kind::done: {
                if (const AnswerPart rest = reader.finish(); !rest.empty()) text = writer.chunk_text(rest);
                text += writer.chunk_done(e->done);
                last = true;
                break;
            }
            case scheduler::Event::Kind::error: text = writer.chunk_error(e->error, e->text); last = true; break;
        }
        if (!text.empty() && !out.write(text)) {
            job.cancel = true;
            return;
        }
        if (last) return;
        e.reset();
    }
}

} // namespace

void serve_generation(const RouteContext & ctx, http::Request & req, http::Response & res, DecodedRequest d,
                      const WriterFactory & make_writer) {
    const bool                  stream = d.stream;
    prepare::PreparedGeneration p      = prepare::prepare_generation(ctx.store, ctx.cfg.preparation, std::move(d));

    const auto  writer = make_writer(p.model_name);
    writer->set_warnings(std::move(p.warnings));
    auto        job    = ctx.scheduler.submit(std::move(p.request), stream);
    EventWaiter waiter(*job, req);
    auto        first = waiter.next();
    if (!first) return; // the client left; its job is cancelled
    if (first->kind == scheduler::Event::Kind::error) {
        send_json(res, http_status(first->error), writer->error_json(first->error, first->text));
        return;
    }

    if (stream) {
        res.status = 200;
        stream_events(res.stream(writer->stream_content_type()), *job, req, std::move(*first), *writer, p.reader);
        return;
    }
    AnswerPart                      answer;
    std::vector<TokenLogprob>       logprobs;
    for (std::optional<scheduler::Event> e = std::move(first); e; e = waiter.next()) {
        if (e->kind == scheduler::Event::Kind::text) {
            answer.append(p.reader.push(e->text));
            logprobs.insert(logprobs.end(), e->logprobs.begin(), e->logprobs.end());
            continue;
        }
        if (e->kind == scheduler::Event::Kind::error) {
            send_json(res, http_status(e->error), writer->error_json(e->error, e->text));
            return;
        }
        answer.append(p.reader.finish());
        send_json(res, 200, writer->answer_json(answer, e->done, logprobs));
        return;
    }
}

} // namespace specd::api
