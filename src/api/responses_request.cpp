#include "api/responses_request.h"

#include <string>

namespace specd::api {

namespace {

const std::string & string_field(const json & obj, const char * key, const std::string & where) {
    const json * v = field(obj, key);
    if (!v || !v->is_string()) throw ParamError(where + "." + key, where + "." + key + " must be a string");
    return v->get_ref<const std::string &>();
}

// A message item's content: a string, or parts (input_text / output_text, input_image).
json chat_content(const json & content, const std::string & where) {
    if (content.is_string()) return content;
    if (!content.is_array()) throw ParamError(where, where + " must be a string or an array of content parts");
    json parts = json::array();
    for (size_t i = 0; i < content.size(); ++i) {
        const json &      part = content[i];
        const std::string at   = where + "[" + std::to_string(i) + "]";
        const json *      type = part.is_object() ? field(part, "type") : nullptr;
        if (!type || !type->is_string()) throw ParamError(at + ".type", at + " must be an object with a type");
        const std::string & t = type->get_ref<const std::string &>();
        if (t == "input_text" || t == "output_text" || t == "text") {
            parts.push_back({{"type", "text"}, {"text", string_field(part, "text", at)}});
        } else if (t == "input_image") {
            // image_url: a data URL (remote URLs are refused by the chat decoder), or {url}.
            const json * url = field(part, "image_url");
            if (url && url->is_object()) url = field(*url, "url");
            if (!url || !url->is_string()) throw ParamError(at + ".image_url", at + ".image_url must be a data URL");
            parts.push_back({{"type", "image_url"}, {"image_url", {{"url", *url}}}});
        } else {
            throw ParamError(at + ".type", at + ".type \"" + t + "\" is not supported (input_text, output_text and input_image are)");
        }
    }
    return parts;
}

// The input items as chat messages. Consecutive function_call items are one assistant turn
// (with the text before them, if the turn had any).
json chat_messages(const json & input) {
    json messages = json::array();
    if (input.is_string()) {
        messages.push_back({{"role", "user"}, {"content", input}});
        return messages;
    }
    if (!input.is_array()) throw ParamError("input", "input must be a string or an array of items");
    for (size_t i = 0; i < input.size(); ++i) {
        const json &      item  = input[i];
        const std::string where = "input[" + std::to_string(i) + "]";
        if (!item.is_object()) throw ParamError(where, where + " must be an object");
        const json *      type_v = field(item, "type");
        const std::string type   = type_v && type_v->is_string() ? type_v->get<std::string>() : "message";
        if (type == "message") {
            const json * content = field(item, "content");
            if (!content) throw ParamError(where + ".content", where + ".content is required");
            messages.push_back({{"role", string_field(item, "role", where)}, {"content", chat_content(*content, where + ".content")}});
        } else if (type == "function_call") {
            const json call = {{"id", string_field(item, "call_id", where)},
                               {"type", "function"},
                               {"function", {{"name", string_field(item, "name", where)},
                                             {"arguments", string_field(item, "arguments", where)}}}};
            json * last = messages.empty() ? nullptr : &messages.back();
            if (last && (*last)["role"] == "assistant") {
                if (!last->contains("tool_calls")) (*last)["tool_calls"] = json::array();
                (*last)["tool_calls"].push_back(call);
            } else {
                messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
            }
        } else if (type == "function_call_output") {
            const json * output = field(item, "output");
            if (!output) throw ParamError(where + ".output", where + ".output is required");
            messages.push_back({{"role", "tool"},
                                {"tool_call_id", string_field(item, "call_id", where)},
                                {"content", chat_content(*output, where + ".output")}});
        } else if (type == "reasoning") {
            continue; // an earlier turn's reasoning: templates drop it from the history anyway
        } else {
            throw ParamError(where + ".type", where + ".type \"" + type + "\" is not supported "
                                              "(message, function_call, function_call_output and reasoning are)");
        }
    }
    return messages;
}

} // namespace

json responses_to_chat(const json & body) {
    if (!body.is_object()) throw ParamError("", "the body must be a JSON object");
    for (const char * key : {"previous_response_id", "conversation"}) {
        if (field(body, key)) {
            throw ParamError(key, std::string(key) + " is not supported: specd keeps no responses; send the whole conversation as input");
        }
    }
    if (const json * b = field(body, "background"); b && *b != false) {
        throw ParamError("background", "background responses are not supported");
    }
    json chat = json::object();
    for (const char * key : {"model", "stream", "temperature", "top_p", "seed", "reasoning", "tool_choice"}) {
        if (const json * v = field(body, key)) chat[key] = *v;
    }
    if (const json * n = field(body, "max_output_tokens")) chat["max_tokens"] = *n;

    json messages = json::array();
    if (const json * instructions = field(body, "instructions")) {
        if (!instructions->is_string()) throw ParamError("instructions", "instructions must be a string");
        messages.push_back({{"role", "system"}, {"content", *instructions}});
    }
    const json * input = field(body, "input");
    if (!input) throw ParamError("input", "input is required");
    for (auto & m : chat_messages(*input)) messages.push_back(std::move(m));
    chat["messages"] = std::move(messages);

    if (const json * tools = field(body, "tools")) {
        if (!tools->is_array()) throw ParamError("tools", "tools must be an array");
        json out = json::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const json &      t     = (*tools)[i];
            const std::string where = "tools[" + std::to_string(i) + "]";
            const json *      type  = t.is_object() ? field(t, "type") : nullptr;
            if (!type || *type != "function") {
                throw ParamError(where + ".type", where + ": only function tools are supported (no hosted tools)");
            }
            json function = {{"name", string_field(t, "name", where)}};
            if (const json * d = field(t, "description")) function["description"] = *d;
            if (const json * p = field(t, "parameters")) function["parameters"] = *p;
            out.push_back({{"type", "function"}, {"function", std::move(function)}});
        }
        chat["tools"] = std::move(out);
    }
    if (const json * text = field(body, "text")) {
        const json * format = text->is_object() ? field(*text, "format") : nullptr;
        if (!text->is_object()) throw ParamError("text", "text must be an object ({\"format\": ...})");
        if (format) {
            const json * type = format->is_object() ? field(*format, "type") : nullptr;
            if (!type || !type->is_string()) throw ParamError("text.format.type", "text.format must be an object with a type");
            if (*type == "json_schema") {
                json js = {{"name", format->value("name", "response")}};
                if (const json * s = field(*format, "schema")) js["schema"] = *s;
                chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
            } else if (*type == "text" || *type == "json_object") {
                chat["response_format"] = {{"type", *type}};
            } else {
                throw ParamError("text.format.type", "text.format.type must be \"text\", \"json_object\" or \"json_schema\"");
            }
        }
    }
    return chat;
}

OpenAIRequest decode_openai_responses(const json & body, const ImageLimits & limits) {
    return decode_openai_chat(responses_to_chat(body), limits);
}

} // namespace specd::api
