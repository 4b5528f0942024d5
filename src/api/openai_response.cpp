#include "api/openai_response.h"

#include "api/logprobs_json.h"

#include "api/ollama_response.h"
#include "api/openai_request.h"
#include "api/tool_json.h"
#include "core/utf8.h"

#include <chrono>
#include <random>

namespace specd::api {

namespace {

int64_t unix_seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// 24 random hex digits: ids only need to be unique, not secret.
std::string random_hex() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    static constexpr char        digits[] = "0123456789abcdef";
    std::string                  out(24, '0');
    for (size_t i = 0; i < out.size(); i += 16) {
        uint64_t bits = rng();
        for (size_t j = i; j < std::min(out.size(), i + 16); ++j, bits >>= 4) out[j] = digits[bits & 15];
    }
    return out;
}

const char * error_type(int status) {
    if (status == 404) return "not_found_error";
    if (status >= 400 && status < 500) return "invalid_request_error";
    return "api_error";
}

// OpenAI's error `code` for the kinds that have one.
json error_code(ErrorKind kind) {
    if (kind == ErrorKind::not_found) return "model_not_found";
    if (kind == ErrorKind::busy) return "server_busy";
    return nullptr;
}

json model_object(const models::StoreEntry & e) {
    return {{"id", e.name.display()}, {"object", "model"}, {"created", unix_seconds(e.modified)}, {"owned_by", e.name.ns}};
}

} // namespace

json openai_error_json(int status, const std::string & message, const json & param, const json & code) {
    // Messages can quote client input; keep the body valid UTF-8 JSON whatever it held.
    return {{"error", {{"message", sanitize_utf8(message)}, {"type", error_type(status)}, {"param", param}, {"code", code}}}};
}

std::pair<int, json> openai_error_of(const std::exception & e) {
    const auto * err = dynamic_cast<const Error *>(&e);
    if (!err) return {500, openai_error_json(500, e.what())};
    const int status = http_status(err->kind());
    json      param  = nullptr;
    if (const auto * pe = dynamic_cast<const ParamError *>(err)) param = pe->param();
    return {status, openai_error_json(status, err->what(), param, error_code(err->kind()))};
}

const char * openai_finish_reason(DoneReason reason) { return reason == DoneReason::length ? "length" : "stop"; }

std::string openai_id(const std::string & prefix) { return prefix + random_hex(); }

int64_t unix_now() { return unix_seconds(std::chrono::system_clock::now()); }

json openai_usage(const scheduler::DoneInfo & done) {
    const int64_t prompt     = done.result.stats.prompt_count;
    const int64_t completion = done.result.stats.eval_count;
    return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

std::string sse_event(const json & j) { return "data: " + serialise(j) + "\n\n"; }

OpenAIWriter::OpenAIWriter(OpenAIEndpoint endpoint, std::string model, bool include_usage) :
    endpoint_(endpoint), model_(std::move(model)), include_usage_(include_usage),
    id_((endpoint == OpenAIEndpoint::chat ? "chatcmpl-" : "cmpl-") + random_hex()),
    created_(unix_seconds(std::chrono::system_clock::now())) {}

json openai_error_of_kind(ErrorKind kind, const std::string & message) {
    return openai_error_json(http_status(kind), message, nullptr, error_code(kind));
}

json OpenAIWriter::error_json(ErrorKind kind, const std::string & message) const { return openai_error_of_kind(kind, message); }

json OpenAIWriter::logprobs(const std::vector<TokenLogprob> & lps) {
    if (lps.empty()) return nullptr;
    if (endpoint_ == OpenAIEndpoint::chat) return {{"content", logprobs_json(lps, true)}};
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
    for (const TokenLogprob & lp : lps) {
        tokens.push_back(sanitize_utf8(lp.token));
        token_logprobs.push_back(lp.logprob);
        json alts = json::object();
        for (const TokenLogprobAlt & alt : lp.top) alts.emplace(sanitize_utf8(alt.token), alt.logprob);
        top.push_back(std::move(alts));
        offsets.push_back(text_offset_);
        text_offset_ += lp.token.size();
    }
    return {{"tokens", std::move(tokens)},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top)},
            {"text_offset", std::move(offsets)}};
}

json OpenAIWriter::answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                               const std::vector<TokenLogprob> & lps) {
    json choice = {{"index", 0}};
    if (endpoint_ == OpenAIEndpoint::chat) {
        json message = {{"role", "assistant"}, {"content", answer.content}};
        // OpenAI's content is null beside tool calls when the model wrote nothing else.
        if (!answer.tool_calls.empty()) {
            if (answer.content.empty()) message["content"] = nullptr;
            message["tool_calls"] = tool_calls_json(answer.tool_calls, /*openai=*/true);
        }
        // Not OpenAI's (it returns no reasoning text): `reasoning` as Ollama's /v1 sends it,
        // and `reasoning_content`, the field llama-server and DeepSeek use.
        if (!answer.thinking.empty()) message["reasoning"] = message["reasoning_content"] = answer.thinking;
        choice["message"] = std::move(message);
    } else {
        choice["text"] = answer.content;
    }
    choice["logprobs"]      = logprobs(lps);
    choice["finish_reason"] = answer.tool_calls.empty() ? openai_finish_reason(done.result.reason) : "tool_calls";
    json j = {{"id", id_},
              {"object", endpoint_ == OpenAIEndpoint::chat ? "chat.completion" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"system_fingerprint", "specd"},
              {"choices", json::array({std::move(choice)})},
              {"usage", openai_usage(done)}};
    add_warnings(j); // not OpenAI's: clients ignore a field they do not know
    return j;
}

json OpenAIWriter::chunk(const AnswerPart & part, const char * finish_reason, const std::vector<TokenLogprob> & lps) {
    json choice = {{"index", 0}};
    if (endpoint_ == OpenAIEndpoint::chat) {
        json delta = json::object();
        if (!role_sent_) delta["role"] = "assistant";
        if (!finish_reason && (part.thinking.empty() || !part.content.empty())) delta["content"] = part.content;
        if (!part.thinking.empty()) delta["reasoning"] = delta["reasoning_content"] = part.thinking;
        if (!part.tool_calls.empty()) {
            delta["tool_calls"] = tool_calls_json(part.tool_calls, /*openai=*/true, calls_sent_);
            calls_sent_ += part.tool_calls.size();
        }
        role_sent_      = true;
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = part.content;
    }
    choice["logprobs"]      = logprobs(lps);
    choice["finish_reason"] = finish_reason ? json(finish_reason) : json();
    json j = {{"id", id_},
              {"object", endpoint_ == OpenAIEndpoint::chat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"system_fingerprint", "specd"},
              {"choices", json::array({std::move(choice)})}};
    // With include_usage every chunk has the field, null until the last one (OpenAI's form).
    if (include_usage_) j["usage"] = nullptr;
    return j;
}

std::string OpenAIWriter::chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & lps) {
    return sse_event(chunk(part, nullptr, lps));
}

std::string OpenAIWriter::chunk_done(const scheduler::DoneInfo & done) {
    json finish = chunk("", calls_sent_ > 0 ? "tool_calls" : openai_finish_reason(done.result.reason));
    add_warnings(finish);
    std::string out = sse_event(finish);
    if (include_usage_) {
        json last       = chunk("", nullptr);
        last["choices"] = json::array();
        last["usage"]   = openai_usage(done);
        out += sse_event(last);
    }
    return out + "data: [DONE]\n\n";
}

std::string OpenAIWriter::chunk_error(ErrorKind kind, const std::string & message) {
    // OpenAI's clients raise an error event's `error` object as an APIError.
    return sse_event(error_json(kind, message));
}

json openai_model_list(const models::Store & store) {
    json data = json::array();
    for (const auto & e : store.list()) data.push_back(model_object(e));
    return {{"object", "list"}, {"data", std::move(data)}};
}

json openai_model(const models::Store & store, const std::string & name) {
    const models::ModelName wanted = models::parse_or_throw(name);
    for (const auto & e : store.list()) {
        if (e.name == wanted) return model_object(e);
    }
    throw Error(ErrorKind::not_found, "model \"" + name + "\" not found");
}

} // namespace specd::api
