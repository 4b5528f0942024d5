#include "api/openai_request.h"

#include "api/tool_json.h"
#include "prepare/images.h"
#include "prepare/options.h"

#include <charconv>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace specd::api {

const json * field(const json & obj, const char * key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
}

namespace {

// OpenAI's own bound on logit_bias entries.
constexpr size_t k_max_logit_bias = 300;

std::string format_bound(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::optional<double> opt_number(const json & body, const char * key, double min, double max) {
    const json * v = field(body, key);
    if (!v) return std::nullopt;
    if (!v->is_number() || v->get<double>() < min || v->get<double>() > max) {
        throw ParamError(key, std::string(key) + " must be a number from " + format_bound(min) + " to " + format_bound(max));
    }
    return v->get<double>();
}

std::optional<int64_t> opt_integer(const json & body, const char * key, int64_t min, int64_t max) {
    const json * v = field(body, key);
    if (!v) return std::nullopt;
    const bool fits = v->is_number_integer() &&
                      !(v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
    if (!fits || v->get<int64_t>() < min || v->get<int64_t>() > max) {
        throw ParamError(key, std::string(key) + " must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    return v->get<int64_t>();
}

bool opt_flag(const json & obj, const char * key, const std::string & param) {
    const json * v = field(obj, key);
    if (!v) return false;
    if (!v->is_boolean()) throw ParamError(param, param + " must be a boolean");
    return v->get<bool>();
}

std::string not_yet(const std::string & what) { return what + " is not supported yet by this server"; }

// Fields whose meaning specd cannot honour yet: a 400 naming them, never a silent answer
// without them. Fields that change nothing in the answer (user, metadata, store, ...) pass.
void reject_unimplemented(const json & body, bool chat) {
    if (const json * v = field(body, "tools"); v && !chat && !(v->is_array() && v->empty())) {
        throw ParamError("tools", "tools are for chat completions");
    }
    if (const json * v = field(body, "functions"); v && !(v->is_array() && v->empty())) {
        throw ParamError("functions", not_yet("functions (the deprecated form of tools)"));
    }
    if (const json * v = field(body, "function_call"); v && !(v->is_string() && (*v == "none" || *v == "auto"))) {
        throw ParamError("function_call", not_yet("function_call other than \"auto\" or \"none\" (tool_choice forces calls)"));
    }
    if (const json * v = field(body, "top_logprobs"); !chat && v && *v != 0) {
        throw ParamError("top_logprobs", "top_logprobs is for chat completions; completions take logprobs: N");
    }
    if (field(body, "audio")) throw ParamError("audio", not_yet("audio output"));
    if (const json * v = field(body, "modalities")) {
        if (!v->is_array()) throw ParamError("modalities", "modalities must be an array");
        for (const auto & m : *v) {
            if (m != "text") throw ParamError("modalities", not_yet("the modality " + m.dump()));
        }
    }
    if (!chat) {
        if (opt_flag(body, "echo", "echo")) throw ParamError("echo", not_yet("echo"));
        if (auto best_of = opt_integer(body, "best_of", 1, 20); best_of && *best_of != 1) {
            throw ParamError("best_of", not_yet("best_of above 1"));
        }
    }
}

// response_format -> the grammar `format` would give: json_object is format "json",
// json_schema its schema (a schema that cannot be compiled is a 400 naming the field).
void decode_response_format(const json & body, GenerateOptions & g, std::vector<std::string> * unenforced) {
    const json * rf = field(body, "response_format");
    if (!rf) return;
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
        throw ParamError("response_format", "response_format must be an object with a type (\"text\", \"json_object\" or \"json_schema\")");
    }
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "text") return;
    json format;
    if (type == "json_object") {
        format = "json";
    } else if (type == "json_schema") {
        const json * js = field(*rf, "json_schema");
        if (!js || !js->is_object()) throw ParamError("response_format.json_schema", "response_format.json_schema must be an object");
        const json * schema = field(*js, "schema");
        if (schema && !schema->is_object()) {
            throw ParamError("response_format.json_schema.schema", "response_format.json_schema.schema must be a JSON Schema object");
        }
        // No schema: any JSON object (OpenAI's schema field is optional).
        format = schema ? *schema : json("json");
    } else {
        throw ParamError("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\", not \"" + type + "\"");
    }
    try {
        g.grammar = prepare::format_grammar(format, unenforced);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) throw;
        throw ParamError(type == "json_schema" ? "response_format.json_schema.schema" : "response_format", e.what());
    }
    g.end_on_complete_json = !g.grammar.empty();
}

// The sampling fields, as Ollama options (applied over the model's PARAMETERs by the server).
json decode_options(const json & body) {
    json o = json::object();
    if (auto v = opt_number(body, "temperature", 0, k_openai_max_temperature)) o["temperature"] = *v;
    if (auto v = opt_number(body, "top_p", 0, 1)) o["top_p"] = *v;
    if (auto v = opt_number(body, "frequency_penalty", -k_openai_max_penalty, k_openai_max_penalty)) o["frequency_penalty"] = *v;
    if (auto v = opt_number(body, "presence_penalty", -k_openai_max_penalty, k_openai_max_penalty)) o["presence_penalty"] = *v;
    if (auto v = opt_integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) o["seed"] = *v;
    // max_completion_tokens is the newer name of max_tokens; it wins when both are given.
    auto max_tokens = opt_integer(body, "max_completion_tokens", 1, prepare::k_max_num_predict);
    if (!max_tokens) max_tokens = opt_integer(body, "max_tokens", 1, prepare::k_max_num_predict);
    if (max_tokens) o["num_predict"] = *max_tokens;
    if (const json * v = field(body, "stop")) {
        json stop = json::array();
        if (v->is_string()) stop.push_back(*v);
        else if (v->is_array()) stop = *v;
        else throw ParamError("stop", "stop must be a string or an array of strings");
        for (const auto & s : stop) {
            if (!s.is_string() || s.get_ref<const std::string &>().empty()) {
                throw ParamError("stop", "stop must be a string or an array of strings, none of them empty");
            }
        }
        if (!stop.empty()) o["stop"] = std::move(stop);
    }
    return o;
}

// What /v1/chat/completions and /v1/completions share: model, stream, n, sampling, format.
// GenerateOptions::logprobs. Chat: `logprobs` (bool) and `top_logprobs` (0..20, only with
// logprobs). Completions: `logprobs` N (0..20): the chosen token and N alternatives.
int32_t decode_logprobs(const json & body, bool chat) {
    if (chat) {
        const bool want = opt_flag(body, "logprobs", "logprobs");
        const auto top  = opt_integer(body, "top_logprobs", 0, 20);
        if (top && *top > 0 && !want) throw ParamError("top_logprobs", "top_logprobs requires logprobs to be true");
        return want ? int32_t(top.value_or(0)) : -1;
    }
    if (const json * v = field(body, "logprobs"); v && v->is_boolean() && !v->get<bool>()) return -1;
    const auto n = opt_integer(body, "logprobs", 0, 20);
    return n ? int32_t(*n) : -1;
}

// OpenAI's logit_bias: {"<token id>": bias from -100 to 100}, added to those tokens' logits
// (-100 bans a token, 100 all but forces it). The ids are checked against the vocabulary
// when the request runs (engine::Sampler).
std::vector<std::pair<int32_t, float>> decode_logit_bias(const json & body) {
    std::vector<std::pair<int32_t, float>> out;
    const json * v = field(body, "logit_bias");
    if (!v) return out;
    if (!v->is_object()) throw ParamError("logit_bias", "logit_bias must be an object of token ids to biases");
    if (v->size() > k_max_logit_bias) {
        throw ParamError("logit_bias", "logit_bias may hold at most " + std::to_string(k_max_logit_bias) + " tokens");
    }
    for (const auto & [key, bias] : v->items()) {
        const std::string at = "logit_bias[" + json(key).dump() + "]";
        int32_t           id = -1;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (ec != std::errc() || end != key.data() + key.size() || id < 0) {
            throw ParamError("logit_bias", at + ": the key must be a token id (a non-negative integer)");
        }
        if (!bias.is_number() || !(bias.get<double>() >= -100.0 && bias.get<double>() <= 100.0)) {
            throw ParamError("logit_bias", at + " must be a number from -100 to 100");
        }
        out.emplace_back(id, bias.get<float>());
    }
    return out;
}

OpenAIRequest decode_common(const json & body, PromptInput::Kind kind) {
    OpenAIRequest r;
    DecodedRequest & d = r.decoded;
    const json * model = field(body, "model");
    if (!model || !model->is_string() || model->get_ref<const std::string &>().empty()) {
        throw ParamError("model", "model is required (a string)");
    }
    d.model = model->get<std::string>();
    reject_unimplemented(body, kind == PromptInput::Kind::chat);
    if (auto n = opt_integer(body, "n", 1, 128); n && *n != 1) {
        throw ParamError("n", "n must be 1: one choice per request is supported");
    }
    d.stream = opt_flag(body, "stream", "stream"); // OpenAI's default: not streamed
    if (const json * so = field(body, "stream_options")) {
        if (!so->is_object()) throw ParamError("stream_options", "stream_options must be an object");
        r.include_usage = opt_flag(*so, "include_usage", "stream_options.include_usage");
    }
    d.options              = decode_options(body);
    d.request.prompt.kind  = kind;
    decode_response_format(body, d.request.generate, &d.schema_unenforced);
    d.request.generate.logprobs = decode_logprobs(body, kind == PromptInput::Kind::chat);
    d.request.generate.sampling.logit_bias = decode_logit_bias(body);
    return r;
}

// An image_url part's data URL -> its base64 text (decoded later, after the count check).
std::string_view data_url_base64(const std::string & url, const std::string & param) {
    constexpr std::string_view scheme = "data:";
    if (url.size() < scheme.size() || url.compare(0, scheme.size(), scheme) != 0) {
        throw ParamError(param, param + ": only data URLs (data:image/...;base64,...) are accepted; remote image URLs are not fetched");
    }
    const size_t comma = url.find(',');
    const std::string_view header = std::string_view(url).substr(scheme.size(), comma == std::string::npos ? 0 : comma - scheme.size());
    constexpr std::string_view base64 = ";base64";
    if (comma == std::string::npos || header.rfind("image/", 0) != 0 || header.size() < base64.size() ||
        header.substr(header.size() - base64.size()) != base64) {
        throw ParamError(param, param + " must be a data URL of the form data:image/<type>;base64,<data>");
    }
    return std::string_view(url).substr(comma + 1);
}

struct PendingImage {
    size_t           message;
    std::string      param; // where the image is, for its errors
    std::string_view base64;
};

// One message's content: a string, null, or an array of text and image_url parts. Text parts
// are joined with newlines; the images are the message's, in order.
std::string decode_content(const json & m, size_t i, std::vector<PendingImage> & images) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json *      c     = field(m, "content");
    if (!c) return "";
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) throw ParamError(where + ".content", where + ".content must be a string or an array of content parts");
    std::string text;
    bool        any_text = false;
    for (size_t j = 0; j < c->size(); ++j) {
        const json &      part = (*c)[j];
        const std::string at   = where + ".content[" + std::to_string(j) + "]";
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
            throw ParamError(at, at + " must be an object with a type");
        }
        const std::string type = part["type"].get<std::string>();
        if (type == "text") {
            const json * t = field(part, "text");
            if (!t || !t->is_string()) throw ParamError(at + ".text", at + ".text must be a string");
            if (any_text) text += "\n";
            text += t->get_ref<const std::string &>();
            any_text = true;
        } else if (type == "image_url") {
            // {"url": ...} as OpenAI sends it; a bare string as some clients do.
            const json * iu  = field(part, "image_url");
            const json * url = iu && iu->is_object() ? field(*iu, "url") : iu;
            if (!url || !url->is_string()) throw ParamError(at + ".image_url.url", at + ".image_url.url must be a string");
            const std::string param = at + ".image_url.url";
            images.push_back({i, param, data_url_base64(url->get_ref<const std::string &>(), param)});
        } else {
            throw ParamError(at + ".type", at + ".type \"" + type + "\" is not supported (text and image_url are)");
        }
    }
    return text;
}

} // namespace

OpenAIRequest decode_openai_chat(const json & body, const ImageLimits & limits) {
    OpenAIRequest r      = decode_common(body, PromptInput::Kind::chat);
    PromptInput &  p      = r.decoded.request.prompt;
    const json *  ms     = field(body, "messages");
    if (!ms || !ms->is_array() || ms->empty()) throw ParamError("messages", "messages must be a non-empty array");
    std::vector<PendingImage> images;
    for (size_t i = 0; i < ms->size(); ++i) {
        const json &      m     = (*ms)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw ParamError(where, where + " must be an object");
        const json * role = field(m, "role");
        if (!role || !role->is_string()) throw ParamError(where + ".role", where + ".role is required");
        std::string r_name = role->get<std::string>();
        if (r_name == "developer") r_name = "system"; // OpenAI's newer name for system messages
        if (r_name != "system" && r_name != "user" && r_name != "assistant" && r_name != "tool") {
            throw ParamError(where + ".role", where + ": invalid role \"" + r_name + "\" (expected system, developer, user, assistant or tool)");
        }
        Message msg;
        msg.role    = r_name;
        msg.content = decode_content(m, i, images);
        if (const json * tc = field(m, "tool_calls")) {
            try {
                msg.tool_calls = decode_tool_calls(*tc, where);
            } catch (const Error & e) {
                throw ParamError(where + ".tool_calls", e.what());
            }
        }
        if (msg.role == "tool") {
            // A result names the call it answers (tool_call_id); templates want the function's
            // name, which OpenAI's clients send only in the call: found by its id, as Ollama's
            // /v1 does, unless the message names it itself.
            for (const char * key : {"tool_call_id", "name"}) {
                const json * v = field(m, key);
                if (v && !v->is_string()) throw ParamError(where + "." + key, where + "." + key + " must be a string");
            }
            if (const json * id = field(m, "tool_call_id")) msg.tool_call_id = id->get<std::string>();
            if (const json * name = field(m, "name")) msg.tool_name = name->get<std::string>();
            for (auto it = p.messages.rbegin(); msg.tool_name.empty() && !msg.tool_call_id.empty() && it != p.messages.rend(); ++it) {
                for (const ToolCall & call : it->tool_calls) {
                    if (call.id == msg.tool_call_id) msg.tool_name = call.name;
                }
            }
        }
        p.messages.push_back(std::move(msg));
    }
    // OpenAI's reasoning_effort, as Ollama's /v1 reads it: "none" turns thinking off, any
    // other effort on (the reasoning comes back as message.reasoning_content).
    // `reasoning: {"effort": ...}` (the Responses API's form, which Ollama's /v1 reads on chat
    // too) means the same; reasoning_effort wins when both are set.
    const json * reasoning = field(body, "reasoning");
    if (reasoning && !reasoning->is_object()) throw ParamError("reasoning", "reasoning must be an object ({\"effort\": ...})");
    const json * effort_field = field(body, "reasoning_effort");
    const char * effort_param = "reasoning_effort";
    if (!effort_field && reasoning) {
        effort_field = field(*reasoning, "effort");
        effort_param = "reasoning.effort";
    }
    if (const json * e = effort_field) {
        if (!e->is_string() || (*e != "none" && *e != "low" && *e != "medium" && *e != "high")) {
            throw ParamError(effort_param, std::string(effort_param) + " must be \"none\", \"low\", \"medium\" or \"high\"");
        }
        const std::string effort = e->get<std::string>();
        p.think = effort == "none" ? ThinkSetting{false, ""} : ThinkSetting{true, effort};
    }
    // tool_choice: "auto" (the model's choice), "none" (the tools are not offered), "required"
    // (some call), or a function by name ({"type": "function", "function": {"name"}}, or the
    // Responses API's {"type": "function", "name"}): held to by a grammar (chat_answer).
    if (const json * tc = field(body, "tool_choice")) {
        if (tc->is_string() && (*tc == "auto" || *tc == "none")) {
            // nothing to force
        } else if (tc->is_string() && *tc == "required") {
            p.tool_required = true;
        } else if (tc->is_object() && tc->value("type", "") == "function") {
            const json * f    = field(*tc, "function");
            const json * name = f && f->is_object() ? field(*f, "name") : field(*tc, "name");
            if (!name || !name->is_string() || name->get_ref<const std::string &>().empty()) {
                throw ParamError("tool_choice", "tool_choice must name its function: {\"type\": \"function\", \"function\": {\"name\": ...}}");
            }
            p.tool_required = true;
            p.tool_forced   = name->get<std::string>();
        } else {
            throw ParamError("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        const json * tools = field(body, "tools");
        if (p.tool_required && !(tools && tools->is_array() && !tools->empty())) {
            throw ParamError("tool_choice", "tool_choice asks for a call, but there are no tools");
        }
    }
    if (const json * tools = field(body, "tools"); tools && !(field(body, "tool_choice") && *field(body, "tool_choice") == "none")) {
        try {
            p.tools = decode_tools(*tools);
        } catch (const Error & e) {
            throw ParamError("tools", e.what());
        }
    }
    // Every image is checked for count and encoded size before any is decoded; they are
    // numbered from 1 in request order, as on /api/chat.
    try {
        prepare::check_image_count(images.size(), limits);
    } catch (const Error & e) {
        throw ParamError("messages", e.what());
    }
    for (size_t n = 0; n < images.size(); ++n) {
        try {
            p.messages[images[n].message].images.push_back(prepare::decode_base64_image(images[n].base64, limits, n + 1));
        } catch (const Error & e) {
            if (e.kind() != ErrorKind::bad_request) throw;
            throw ParamError(images[n].param, e.what());
        }
    }
    return r;
}

OpenAIRequest decode_openai_completion(const json & body) {
    OpenAIRequest r = decode_common(body, PromptInput::Kind::generate);
    PromptInput &  p = r.decoded.request.prompt;
    const json *  prompt = field(body, "prompt");
    if (prompt && prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) prompt = &(*prompt)[0];
    if (!prompt || !prompt->is_string()) {
        throw ParamError("prompt", "prompt must be a string (one prompt per request; token arrays are not supported)");
    }
    p.prompt = prompt->get<std::string>();
    if (p.prompt.empty()) throw ParamError("prompt", "prompt must not be empty");
    if (const json * s = field(body, "suffix")) {
        if (!s->is_string()) throw ParamError("suffix", "suffix must be a string");
        p.suffix = s->get<std::string>();
    }
    return r;
}

} // namespace specd::api
