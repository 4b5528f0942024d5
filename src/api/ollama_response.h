#pragma once
// Ollama's response objects: streamed chunks, the final object with timings, errors.
#include "api/generation_writer.h"
#include "core/error.h"
#include "core/json_input.h"
#include "scheduler/job.h"

#include <chrono>
#include <string>

namespace specd::api {

// `logprobs`: Ollama's "logprobs" array, present when non-empty.
// With `think` or `tools`: "thinking" and "tool_calls" beside the text when they have any.
json text_chunk(const std::string & model, const AnswerPart & part, bool chat,
                const std::vector<TokenLogprob> & logprobs = {});
json final_chunk(const std::string & model, const scheduler::DoneInfo & done, bool chat,
                 const AnswerPart & whole = {}, const std::vector<TokenLogprob> & logprobs = {});
json error_body(const std::string & message);
// The text of a JSON response: compact, and model output that is not UTF-8 replaced (U+FFFD),
// never a throw mid-response.
std::string serialise(const json & j);
// One NDJSON line of a streamed response: serialise(j) and "\n".
std::string ndjson_line(const json & j);
// A request's speculation counters; accepted_per_position[i] is the rate at draft position i.
json speculation_json(const spec::DepthStats & stats);
int  http_status(ErrorKind kind);

// /api/generate (chat false) and /api/chat answers: one object, or NDJSON chunks and the
// final object; an error after output has started is a last {"error"} line.
class OllamaWriter final : public GenerationWriter {
  public:
    OllamaWriter(std::string model, bool chat) : model_(std::move(model)), chat_(chat) {}

    json         error_json(ErrorKind kind, const std::string & message) const override;
    json         answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                             const std::vector<TokenLogprob> & logprobs = {}) override;
    const char * stream_content_type() const override { return "application/x-ndjson"; }
    std::string  chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & logprobs = {}) override;
    std::string  chunk_done(const scheduler::DoneInfo & done) override;
    std::string  chunk_error(ErrorKind kind, const std::string & message) override;

  private:
    std::string model_;
    bool        chat_;
};

} // namespace specd::api
