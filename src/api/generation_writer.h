#pragma once
// How a generation's events become an HTTP answer. Server::serve_generation is the same loop
// for every API (first event, then the whole body or a stream); a writer gives it the bytes:
// Ollama's NDJSON (ollama_response.h) or OpenAI's server-sent events (openai_response.h).
// One writer per request: it may keep state across the chunks of one answer (an id).
#include "core/answer_part.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/logprobs.h"
#include "core/request.h"
#include "scheduler/job.h"

#include <string>
#include <vector>

namespace specd::api {

class GenerationWriter {
  public:
    virtual ~GenerationWriter() = default;

    // Before any output: the body of an HTTP error (the status is http_status(kind)).
    virtual json error_json(ErrorKind kind, const std::string & message) const = 0;

    // Not streamed: the whole answer, once it is done, with every reported logprob.
    virtual json answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                             const std::vector<TokenLogprob> & logprobs = {}) = 0;

    // Streamed: the content type, then the bytes each event adds. After chunk_done or
    // chunk_error nothing more is written.
    virtual const char * stream_content_type() const = 0;
    virtual std::string  chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & logprobs = {}) = 0;
    virtual std::string  chunk_done(const scheduler::DoneInfo & done) = 0;
    virtual std::string  chunk_error(ErrorKind kind, const std::string & message) = 0;

    // What the request asked for that was not honoured (DecodedRequest::warnings): listed as
    // `warnings` in the final response or chunk, so no downgrade is silent.
    void set_warnings(std::vector<std::string> warnings) { warnings_ = std::move(warnings); }

  protected:
    // `j` with a `warnings` array when there are any.
    void add_warnings(json & j) const {
        if (!warnings_.empty()) j["warnings"] = warnings_;
    }

  private:
    std::vector<std::string> warnings_;
};

} // namespace specd::api
