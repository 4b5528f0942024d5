#include "api/responses_response.h"

#include "api/ollama_response.h"
#include "api/openai_response.h"
#include "api/tool_json.h"

namespace specd::api {

namespace {

json usage_of(const scheduler::DoneInfo & done) {
    const int64_t in = done.result.stats.prompt_count, out = done.result.stats.eval_count;
    return {{"input_tokens", in},
            {"input_tokens_details", {{"cached_tokens", 0}}},
            {"output_tokens", out},
            {"output_tokens_details", {{"reasoning_tokens", 0}}},
            {"total_tokens", in + out}};
}

} // namespace

ResponsesWriter::ResponsesWriter(std::string model) :
    model_(std::move(model)), id_(openai_id("resp_")), created_(unix_now()), message_id_(openai_id("msg_")),
    reasoning_id_(openai_id("rs_")) {}

json ResponsesWriter::error_json(ErrorKind kind, const std::string & message) const { return openai_error_of_kind(kind, message); }

json ResponsesWriter::reasoning_item() const {
    return {{"type", "reasoning"},
            {"id", reasoning_id_},
            {"summary", json::array({{{"type", "summary_text"}, {"text", answer_.thinking}}})}};
}

json ResponsesWriter::message_item(const char * status) const {
    return {{"type", "message"},
            {"id", message_id_},
            {"status", status},
            {"role", "assistant"},
            {"content", json::array({{{"type", "output_text"}, {"text", answer_.content}, {"annotations", json::array()}}})}};
}

json ResponsesWriter::call_item(size_t i) const {
    const json call = tool_calls_json({answer_.tool_calls[i]}, /*openai=*/true)[0];
    return {{"type", "function_call"},
            {"id", call_ids_[i]},
            {"call_id", call["id"]},
            {"name", call["function"]["name"]},
            {"arguments", call["function"]["arguments"]},
            {"status", "completed"}};
}

json ResponsesWriter::response(const scheduler::DoneInfo * done) const {
    json output = json::array();
    if (!answer_.thinking.empty()) output.push_back(reasoning_item());
    // A message item unless the answer is only tool calls.
    if (!answer_.content.empty() || answer_.tool_calls.empty()) output.push_back(message_item(done ? "completed" : "in_progress"));
    for (size_t i = 0; i < answer_.tool_calls.size(); ++i) output.push_back(call_item(i));
    const bool cut = done && done->result.reason == DoneReason::length;
    json       r   = {{"id", id_},
                      {"object", "response"},
                      {"created_at", created_},
                      {"status", !done ? "in_progress" : cut ? "incomplete" : "completed"},
                      {"error", nullptr},
                      {"incomplete_details", cut ? json{{"reason", "max_output_tokens"}} : json()},
                      {"model", model_},
                      {"output", std::move(output)},
                      {"parallel_tool_calls", true},
                      {"tool_choice", "auto"},
                      {"tools", json::array()},
                      {"usage", done ? usage_of(*done) : json()}};
    if (done) add_warnings(r);
    return r;
}

json ResponsesWriter::answer_json(const AnswerPart & answer, const scheduler::DoneInfo & done,
                                  const std::vector<TokenLogprob> &) {
    answer_ = answer;
    // Every call gets its item id (a copy: tool_calls_json makes up a call_id once per call).
    for (auto & c : answer_.tool_calls) {
        if (c.id.empty()) c.id = openai_id("call_");
        call_ids_.push_back(openai_id("fc_"));
    }
    return response(&done);
}

std::string ResponsesWriter::event(const std::string & type, json data) {
    data["type"]            = type;
    data["sequence_number"] = sequence_++;
    return "event: " + type + "\ndata: " + serialise(data) + "\n\n";
}

std::string ResponsesWriter::open_message() {
    if (message_open_) return "";
    message_open_   = true;
    std::string out;
    // Reasoning comes first in `output`: its item is complete once the answer starts.
    if (!answer_.thinking.empty() && !reasoning_sent_) {
        reasoning_sent_ = true;
        out += event("response.output_item.added", {{"output_index", 0}, {"item", reasoning_item()}});
        out += event("response.output_item.done", {{"output_index", 0}, {"item", reasoning_item()}});
    }
    const int index = reasoning_sent_ ? 1 : 0;
    json      item  = message_item("in_progress");
    item["content"] = json::array();
    out += event("response.output_item.added", {{"output_index", index}, {"item", std::move(item)}});
    out += event("response.content_part.added", {{"item_id", message_id_},
                                                 {"output_index", index},
                                                 {"content_index", 0},
                                                 {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
    return out;
}

std::string ResponsesWriter::chunk_text(const AnswerPart & part, const std::vector<TokenLogprob> &) {
    std::string out;
    if (!started_) {
        started_ = true;
        out += event("response.created", {{"response", response(nullptr)}});
        out += event("response.in_progress", {{"response", response(nullptr)}});
    }
    answer_.thinking += part.thinking;
    if (!part.content.empty()) {
        out += open_message();
        answer_.content += part.content;
        out += event("response.output_text.delta", {{"item_id", message_id_},
                                                    {"output_index", reasoning_sent_ ? 1 : 0},
                                                    {"content_index", 0},
                                                    {"delta", part.content}});
    }
    for (ToolCall c : part.tool_calls) {
        if (c.id.empty()) c.id = openai_id("call_");
        answer_.tool_calls.push_back(std::move(c));
        call_ids_.push_back(openai_id("fc_"));
    }
    return out;
}

std::string ResponsesWriter::chunk_done(const scheduler::DoneInfo & done) {
    std::string out = chunk_text(AnswerPart{});
    // An answer without text still has its (empty) message item, unless it is only calls.
    if (answer_.tool_calls.empty()) out += open_message();
    if (!answer_.thinking.empty() && !reasoning_sent_) { // reasoning and nothing else
        reasoning_sent_ = true;
        out += event("response.output_item.added", {{"output_index", 0}, {"item", reasoning_item()}});
        out += event("response.output_item.done", {{"output_index", 0}, {"item", reasoning_item()}});
    }
    int index = reasoning_sent_ ? 1 : 0;
    if (message_open_) {
        const json part = {{"type", "output_text"}, {"text", answer_.content}, {"annotations", json::array()}};
        out += event("response.output_text.done",
                     {{"item_id", message_id_}, {"output_index", index}, {"content_index", 0}, {"text", answer_.content}});
        out += event("response.content_part.done", {{"item_id", message_id_}, {"output_index", index}, {"content_index", 0}, {"part", part}});
        out += event("response.output_item.done", {{"output_index", index}, {"item", message_item("completed")}});
        ++index;
    }
    // Calls arrive whole (the answer reader sends each once it is complete): one delta each.
    for (size_t i = 0; i < answer_.tool_calls.size(); ++i, ++index) {
        json item         = call_item(i);
        json added        = item;
        added["arguments"] = "";
        added["status"]    = "in_progress";
        out += event("response.output_item.added", {{"output_index", index}, {"item", std::move(added)}});
        out += event("response.function_call_arguments.delta",
                     {{"item_id", call_ids_[i]}, {"output_index", index}, {"delta", item["arguments"]}});
        out += event("response.function_call_arguments.done",
                     {{"item_id", call_ids_[i]}, {"output_index", index}, {"arguments", item["arguments"]}});
        out += event("response.output_item.done", {{"output_index", index}, {"item", std::move(item)}});
    }
    const bool cut = done.result.reason == DoneReason::length;
    out += event(cut ? "response.incomplete" : "response.completed", {{"response", response(&done)}});
    return out;
}

std::string ResponsesWriter::chunk_error(ErrorKind kind, const std::string & message) {
    const json body = error_json(kind, message)["error"];
    return event("error", {{"code", body["code"]}, {"message", body["message"]}, {"param", body["param"]}});
}

} // namespace specd::api
