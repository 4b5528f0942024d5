#include "api/ollama_response.h"

#include "api/logprobs_json.h"
#include "api/tool_json.h"
#include "core/time_format.h"
#include "core/utf8.h"

#include <ctime>

namespace specd::api {

json text_chunk(const std::string & model, const AnswerPart & part, bool chat,
                const std::vector<TokenLogprob> & logprobs) {
    json j = {{"model", model}, {"created_at", format_time(std::chrono::system_clock::now())}};
    if (chat) {
        j["message"] = {{"role", "assistant"}, {"content", part.content}};
        if (!part.thinking.empty()) j["message"]["thinking"] = part.thinking;
        if (!part.tool_calls.empty()) j["message"]["tool_calls"] = tool_calls_json(part.tool_calls, /*openai=*/false);
    } else {
        j["response"] = part.content;
        if (!part.thinking.empty()) j["thinking"] = part.thinking;
    }
    j["done"] = false;
    if (!logprobs.empty()) j["logprobs"] = logprobs_json(logprobs, false);
    return j;
}

json final_chunk(const std::string & model, const scheduler::DoneInfo & d, bool chat, const AnswerPart & whole,
                 const std::vector<TokenLogprob> & logprobs) {
    json j = text_chunk(model, whole, chat, logprobs);
    j["done"]        = true;
    j["done_reason"] = done_reason_name(d.result.reason);
    if (!chat && (d.result.reason == DoneReason::stop || d.result.reason == DoneReason::length)) j["context"] = d.result.context;
    j["total_duration"]       = d.total_ns;
    j["load_duration"]        = d.load_ns;
    j["prompt_eval_count"]    = d.result.stats.prompt_eval_count;
    j["prompt_eval_duration"] = d.result.stats.prompt_eval_ns;
    j["eval_count"]           = d.result.stats.eval_count;
    j["eval_duration"]        = d.result.stats.eval_ns;
    if (d.result.stats.image_count > 0) {
        // Not Ollama's: the images evaluated for this prompt (those reused from the KV or
        // the prompt cache are not), within prompt_eval_count and prompt_eval_duration.
        j["vision"] = {{"images", d.result.stats.image_count},
                       {"image_tokens", d.result.stats.image_tokens},
                       {"encode_duration", d.result.stats.image_encode_ns},
                       {"decode_duration", d.result.stats.image_decode_ns}};
    }
    if (d.result.reason == DoneReason::stop || d.result.reason == DoneReason::length) {
        j["speculation"] = speculation_json(d.result.speculation);
        const auto & g   = d.result.grammar_drafts;
        auto &       s   = j["speculation"];
        s["forced"]                   = g.forced;
        s["forced_accepted"]          = g.forced_accepted;
        s["grammar_truncated"]        = g.truncated_tokens;
        s["grammar_truncated_rounds"] = g.truncated_rounds;
        s["grammar_no_legal_draft"]   = g.no_legal_draft;
        // Not Ollama's: what drafted (prompt-lookup, draft-model, gemma4-assistant).
        s["drafter"]                  = d.result.drafter;
        // Not Ollama's: the share of eval_duration the grammar took (0 without `format`).
        j["grammar_duration"] = g.grammar_ns;
    }
    return j;
}

json speculation_json(const spec::DepthStats & s) {
    json per_position = json::array();
    for (size_t i = 0; i < s.accepted_per_position.size(); ++i) {
        const int64_t drafted = i < s.drafted_per_position.size() ? s.drafted_per_position[i] : 0;
        per_position.push_back(drafted > 0 ? double(s.accepted_per_position[i]) / double(drafted) : 0.0);
    }
    return {{"rounds", s.rounds},          {"drafted", s.drafted},
            {"accepted", s.accepted},      {"accepted_per_position", per_position},
            {"mean_k", s.mean_k()},        {"zero_k_rounds", s.zero_k_rounds},
            {"probes", s.probes}};
}

json error_body(const std::string & message) {
    // Messages can quote client input; keep the body valid UTF-8 JSON whatever it held.
    return json{{"error", sanitize_utf8(message)}};
}

std::string serialise(const json & j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string ndjson_line(const json & j) { return serialise(j) + "\n"; }

int http_status(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::bad_request: return 400;
        case ErrorKind::not_found:   return 404;
        case ErrorKind::busy:        return 503;
        case ErrorKind::cancelled:   return 499;
        case ErrorKind::internal:    return 500;
        case ErrorKind::upstream:    return 502;
    }
    return 500;
}

json OllamaWriter::error_json(ErrorKind, const std::string & message) const { return error_body(message); }

json OllamaWriter::answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                              const std::vector<TokenLogprob> & logprobs) {
    json j = final_chunk(model_, done, chat_, answer, logprobs);
    add_warnings(j);
    return j;
}

std::string OllamaWriter::chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> & logprobs) {
    return ndjson_line(text_chunk(model_, part, chat_, logprobs));
}

std::string OllamaWriter::chunk_done(const scheduler::DoneInfo & done) {
    json j = final_chunk(model_, done, chat_);
    add_warnings(j);
    return ndjson_line(j);
}

std::string OllamaWriter::chunk_error(ErrorKind, const std::string & message) { return ndjson_line(error_body(message)); }

} // namespace specd::api
