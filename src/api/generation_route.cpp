#include "api/generation_route.h"

#include "api/chat_answer.h"
#include "api/event_waiter.h"
#include "api/http_json.h"
#include "api/model_catalog.h"
#include "api/ollama_response.h"
#include "api/prompt_size.h"

#include <cstdio>

namespace specd::api {

namespace {

// The rest of a streamed answer, event by event, from `first` on. Returns when the answer is
// done, failed, or its client is gone (the job is then cancelled).
void stream_events(http::ResponseStream & out, scheduler::Job & job, const http::Request & req,
                   scheduler::Event first, GenerationWriter & writer, AnswerReader & reader) {
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
    const ServedModel m = catalog_resolve(ctx.store, d.model);
    if (!m.files.projector && !d.request.prompt.all_images().empty()) {
        throw bad_request("model \"" + m.files.name + "\" does not support images (it has no vision projector)");
    }
    d.request.model = m.files;
    if (d.request.prompt.kind == PromptSpec::Kind::chat && !d.request.load_only && !m.messages.empty()) {
        // As Ollama: the model's MESSAGEs are the start of every conversation with it.
        auto & messages = d.request.prompt.messages;
        messages.insert(messages.begin(), m.messages.begin(), m.messages.end());
    }
    d.request.context.num_ctx = ctx.cfg.default_num_ctx;
    if (!d.schema_unenforced.empty()) {
        // As Ollama, a schema with keywords the grammar cannot enforce is served (without
        // them, said in warnings); strict, it is refused as before.
        if (ctx.cfg.strict_schema) {
            throw bad_request("invalid format: unsupported JSON schema feature " + d.schema_unenforced.front() +
                              " (SPECD_STRICT_SCHEMA is set)");
        }
        for (const std::string & w : d.schema_unenforced) d.warnings.push_back("format: " + w);
    }
    apply_options(m.params, d.options, d.request, d.warnings);
    for (const std::string & w : d.warnings) std::fprintf(stderr, "specd: %s: %s\n", m.files.name.c_str(), w.c_str());
    check_prompt_text(d.request.prompt, d.request.context.num_ctx); // before anything renders it
    if (ctx.cfg.no_draft) d.request.generate.draft_num_predict = 0;
    if (ctx.cfg.unseeded_rejection && d.request.generate.sampling.seed < 0) d.request.generate.rejection_sampling = true;
    AnswerReader reader = prepare_answer(d);

    const auto  writer = make_writer(m.files.name);
    writer->set_warnings(std::move(d.warnings));
    auto        job    = ctx.scheduler.submit(std::move(d.request));
    EventWaiter waiter(*job, req);
    auto        first = waiter.next();
    if (!first) return; // the client left; its job is cancelled
    if (first->kind == scheduler::Event::Kind::error) {
        send_json(res, http_status(first->error), writer->error_json(first->error, first->text));
        return;
    }

    if (d.stream) {
        res.status = 200;
        stream_events(res.stream(writer->stream_content_type()), *job, req, std::move(*first), *writer, reader);
        return;
    }
    AnswerPart                      answer;
    std::vector<TokenLogprob>       logprobs;
    for (std::optional<scheduler::Event> e = std::move(first); e; e = waiter.next()) {
        if (e->kind == scheduler::Event::Kind::text) {
            answer.append(reader.push(e->text));
            logprobs.insert(logprobs.end(), e->logprobs.begin(), e->logprobs.end());
            continue;
        }
        if (e->kind == scheduler::Event::Kind::error) {
            send_json(res, http_status(e->error), writer->error_json(e->error, e->text));
            return;
        }
        answer.append(reader.finish());
        send_json(res, 200, writer->answer_json(answer, e->done, logprobs));
        return;
    }
}

} // namespace specd::api
