#pragma once
// OpenAI's Responses API answer (POST /v1/responses): a `response` object whose `output` holds
// a reasoning item (with `think`), a message item with one output_text part, and a
// function_call item per tool call; or, streamed, the typed server-sent events the SDKs read:
// response.created, response.in_progress, response.output_item.added, response.content_part.
// added, response.output_text.delta ..., the matching .done events, function_call_arguments
// delta/done per call, then response.completed (response.incomplete when max_output_tokens
// cut the answer), each with its sequence_number.
#include "api/generation_writer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace specd::api {

class ResponsesWriter final : public GenerationWriter {
  public:
    explicit ResponsesWriter(std::string model);

    json         error_json(ErrorKind kind, const std::string & message) const override;
    json         answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                             const std::vector<TokenLogprob> & logprobs = {}) override;
    const char * stream_content_type() const override { return "text/event-stream"; }
    std::string  chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & logprobs = {}) override;
    std::string  chunk_done(const scheduler::DoneInfo & done) override;
    std::string  chunk_error(ErrorKind kind, const std::string & message) override;

  private:
    // The response object: `output` from what was answered so far, status and usage from
    // `done` (null: in progress).
    json response(const scheduler::DoneInfo * done) const;
    json reasoning_item() const;
    json message_item(const char * status) const;
    json call_item(size_t i) const;
    // "event: <type>\ndata: <json with type and sequence_number>\n\n".
    std::string event(const std::string & type, json data);
    // The message item's opening events (after the reasoning item's, if any), once.
    std::string open_message();

    std::string           model_;
    std::string           id_;
    int64_t               created_;
    std::string           message_id_;
    std::string           reasoning_id_;
    AnswerPart            answer_;            // everything answered so far
    int64_t               sequence_     = 0;
    bool                  started_      = false; // response.created sent
    bool                  message_open_ = false;
    bool                  reasoning_sent_ = false;
    std::vector<std::string> call_ids_;     // fc_… per call
};

} // namespace specd::api
