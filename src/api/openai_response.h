#pragma once
// OpenAI's response objects for /v1: chat completions and completions (whole, or streamed as
// server-sent events ending with `data: [DONE]`), the model list, and OpenAI's error shape
// {"error": {message, type, param, code}}.
#include "api/generation_writer.h"
#include "models/store.h"

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace specd::api {

enum class OpenAIEndpoint { chat, completion };

// OpenAI's error body. The type follows the status: 404 not_found_error, other 4xx
// invalid_request_error, 5xx api_error. `param` and `code` are null unless given.
json openai_error_json(int status, const std::string & message, const json & param = nullptr, const json & code = nullptr);
// The body of a /v1 error of `kind` (http_status(kind)): an unknown model is code
// "model_not_found", a full queue "server_busy".
json openai_error_of_kind(ErrorKind kind, const std::string & message);
// An exception that ended a /v1 request -> its status and body: a specd::Error's kind sets
// the status, a ParamError names its field, an unknown model is code "model_not_found".
std::pair<int, json> openai_error_of(const std::exception & e);

const char * openai_finish_reason(DoneReason reason); // "stop" | "length"
// `prefix` and 24 random hex digits ("chatcmpl-…", "resp_…"): unique, not secret.
std::string openai_id(const std::string & prefix);
int64_t     unix_now();
// {prompt_tokens, completion_tokens, total_tokens}: the whole prompt, reused tokens included.
json openai_usage(const scheduler::DoneInfo & done);

class OpenAIWriter final : public GenerationWriter {
  public:
    // id "chatcmpl-<hex>" or "cmpl-<hex>", created now: the same in every chunk of the answer.
    OpenAIWriter(OpenAIEndpoint endpoint, std::string model, bool include_usage);

    json         error_json(ErrorKind kind, const std::string & message) const override;
    json         answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                             const std::vector<TokenLogprob> & logprobs = {}) override;
    const char * stream_content_type() const override { return "text/event-stream"; }
    std::string  chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & logprobs = {}) override;
    std::string  chunk_done(const scheduler::DoneInfo & done) override;
    std::string  chunk_error(ErrorKind kind, const std::string & message) override;

    const std::string & id() const { return id_; }

  private:
    // A chat.completion.chunk or text_completion object with one choice.
    json chunk(const AnswerPart & part, const char * finish_reason, const std::vector<TokenLogprob> & logprobs = {});
    // A choice's "logprobs": null when none; chat: {"content": [...]}; completions: the legacy
    // {tokens, token_logprobs, top_logprobs, text_offset}.
    json logprobs(const std::vector<TokenLogprob> & logprobs);

    OpenAIEndpoint endpoint_;
    std::string    model_;
    bool           include_usage_;
    std::string    id_;
    int64_t        created_;      // Unix seconds
    bool           role_sent_ = false; // chat: the first delta carries the role
    size_t         text_offset_ = 0;   // completions: bytes of the answer covered by reported tokens
    size_t         calls_sent_  = 0;   // chat: tool calls streamed so far (their delta indexes)
};

// One server-sent event: "data: <json>\n\n".
std::string sse_event(const json & j);

// GET /v1/models and /v1/models/{model}: {id, object: "model", created, owned_by}. An unknown
// model is a not_found Error, an invalid name a bad_request.
json openai_model_list(const models::Store & store);
json openai_model(const models::Store & store, const std::string & name);

} // namespace specd::api
