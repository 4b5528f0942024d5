#include "api/ollama_request.h"

#include "api/tool_json.h"
#include "core/error.h"
#include "prepare/images.h"
#include "prepare/options.h"
#include "templates/ollama_prompt.h"

#include <cmath>
#include <cstdio>
#include <regex>
#include <set>

namespace specd::api {

namespace {

// `think`: a boolean, or an effort ("low" | "medium" | "high", which also turns it on).
std::optional<ThinkSetting> decode_think(const json & body) {
    auto it = body.find("think");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (it->is_boolean()) return ThinkSetting{it->get<bool>(), ""};
    static const std::set<std::string> efforts = {"low", "medium", "high"};
    if (it->is_string() && efforts.count(it->get<std::string>())) return ThinkSetting{true, it->get<std::string>()};
    throw bad_request("think must be a boolean or \"low\", \"medium\", \"high\"");
}

// `thinking_budget_chars` (not Ollama's): the most characters the reasoning may take before
// the answer, with `think` and `format`; see DecodedRequest.
std::optional<int64_t> decode_thinking_budget(const json & body) {
    auto it = body.find("thinking_budget_chars");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(prepare::k_max_thinking_budget_chars)) ||
        it->get<int64_t>() < 0 || it->get<int64_t>() > prepare::k_max_thinking_budget_chars) {
        throw bad_request("thinking_budget_chars must be an integer between 0 and " + std::to_string(prepare::k_max_thinking_budget_chars));
    }
    return it->get<int64_t>();
}

// `logprobs` (bool) and `top_logprobs` (0..20, as Ollama bounds it): GenerateOptions::logprobs.
// A positive top_logprobs alone turns logprobs on.
int32_t decode_logprobs(const json & body) {
    bool want = false;
    if (auto it = body.find("logprobs"); it != body.end() && !it->is_null()) {
        if (!it->is_boolean()) throw bad_request("logprobs must be a boolean");
        want = it->get<bool>();
    }
    int64_t top = 0;
    if (auto it = body.find("top_logprobs"); it != body.end() && !it->is_null()) {
        if (!it->is_number_integer()) throw bad_request("top_logprobs must be an integer between 0 and 20");
        top = it->is_number_unsigned() && it->get<uint64_t>() > 20 ? 21 : it->get<int64_t>();
        if (top < 0 || top > 20) throw bad_request("top_logprobs must be between 0 and 20");
    }
    return want || top > 0 ? int32_t(top) : -1;
}

// The `images` arrays of a request: (where, array) pairs, in request order.
std::vector<std::pair<std::string, const json *>> image_arrays(const json & body, PromptInput::Kind kind) {
    std::vector<std::pair<std::string, const json *>> out;
    const auto add = [&](const json & holder, const std::string & where) {
        auto it = holder.find("images");
        if (it == holder.end() || it->is_null()) return;
        if (!it->is_array()) throw bad_request(where + "images must be an array of base64 strings");
        out.emplace_back(where + "images", &*it);
    };
    if (kind == PromptInput::Kind::generate) {
        add(body, "");
    } else if (auto ms = body.find("messages"); ms != body.end() && ms->is_array()) {
        for (size_t i = 0; i < ms->size(); ++i) {
            if ((*ms)[i].is_object()) add((*ms)[i], "messages[" + std::to_string(i) + "].");
        }
    }
    return out;
}

// Decodes every image of the request, in order, after checking how many there are: the
// count, each one's encoded size and its header are all checked before anything is decoded.
std::vector<std::vector<ImagePtr>> decode_images(const json & body, PromptInput::Kind kind,
                                                 const ImageLimits & limits) {
    const auto arrays = image_arrays(body, kind);
    size_t     total  = 0;
    for (const auto & [where, arr] : arrays) total += arr->size();
    prepare::check_image_count(total, limits);
    std::vector<std::vector<ImagePtr>> out;
    size_t                             n = 0;
    for (const auto & [where, arr] : arrays) {
        auto & images = out.emplace_back();
        for (const auto & item : *arr) {
            ++n; // images are numbered from 1 in request order in every message
            if (!item.is_string()) throw bad_request(where + " must hold base64 strings");
            images.push_back(prepare::decode_base64_image(item.get_ref<const std::string &>(), limits, n));
        }
    }
    return out;
}

void decode_common(const json & body, DecodedRequest & d, PromptInput::Kind kind) {
    d.model = require_string(body, "model");
    d.stream = opt_bool(body, "stream").value_or(true);
    GenerateRequest & r = d.request;
    r.prompt.kind       = kind;
    // A request's own template (Ollama Go syntax), checked here: a broken one is a 400.
    if (auto t = opt_string(body, "template"); t && !t->empty()) {
        templates::parse_ollama_template(*t);
        r.prompt.template_text = *t;
    }
    r.generate.truncate = opt_bool(body, "truncate").value_or(true);
    r.generate.shift    = opt_bool(body, "shift").value_or(true);
    r.generate.logprobs = decode_logprobs(body);
    if (auto it = body.find("format"); it != body.end()) {
        r.generate.grammar              = prepare::format_grammar(*it, &d.schema_unenforced);
        r.generate.end_on_complete_json = !r.generate.grammar.empty();
    }
    r.prompt.think          = decode_think(body);
    d.thinking_budget_chars = decode_thinking_budget(body);
    if (d.thinking_budget_chars && !(r.prompt.think && r.prompt.think->enabled && !r.generate.grammar.empty())) {
        throw bad_request("thinking_budget_chars bounds the reasoning before a `format` answer: it needs think and format");
    }
    if (auto it = body.find("keep_alive"); it != body.end()) r.keep_alive = parse_keep_alive(*it);
    if (auto it = body.find("options"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) throw bad_request("options must be an object");
        d.options = *it;
    } else {
        d.options = json::object();
    }
}

} // namespace

DecodedRequest decode_generate(const json & body, const ImageLimits & limits) {
    DecodedRequest d;
    decode_common(body, d, PromptInput::Kind::generate);
    PromptInput & p = d.request.prompt;
    if (auto images = decode_images(body, PromptInput::Kind::generate, limits); !images.empty()) p.images = std::move(images[0]);
    p.prompt = opt_string(body, "prompt").value_or("");
    p.system = opt_string(body, "system").value_or("");
    p.suffix = opt_string(body, "suffix").value_or("");
    p.raw    = opt_bool(body, "raw").value_or(false);
    // A raw prompt is not templated, so no template says how its reasoning would read.
    if (p.raw && p.think && p.think->enabled) throw bad_request("think cannot be combined with raw");
    if (!p.suffix.empty() && p.think && p.think->enabled) throw bad_request("think cannot be combined with suffix (insert)");
    if (auto it = body.find("context"); it != body.end() && !it->is_null()) {
        if (!it->is_array()) throw bad_request("context must be an array of token ids");
        for (const auto & t : *it) {
            if (!t.is_number_integer()) throw bad_request("context must be an array of token ids");
            const int64_t v = t.get<int64_t>();
            if (v < 0 || v > INT32_MAX) throw bad_request("context holds an invalid token id");
            p.context.push_back(static_cast<int32_t>(v));
        }
    }
    d.request.load_only = p.prompt.empty() && p.suffix.empty() && p.images.empty();
    return d;
}

DecodedRequest decode_chat(const json & body, const ImageLimits & limits) {
    DecodedRequest d;
    decode_common(body, d, PromptInput::Kind::chat);
    PromptInput & p = d.request.prompt;
    if (auto it = body.find("messages"); it != body.end() && !it->is_null()) {
        if (!it->is_array()) throw bad_request("messages must be an array");
        size_t i = 0;
        for (const auto & m : *it) {
            const std::string where = "messages[" + std::to_string(i++) + "]";
            if (!m.is_object()) throw bad_request(where + " must be an object");
            const auto role = opt_string(m, "role");
            if (!role || role->empty()) throw bad_request(where + ": role is required");
            static const std::set<std::string> roles = {"system", "user", "assistant", "tool"};
            if (!roles.count(*role)) {
                throw bad_request(where + ": invalid role \"" + *role + "\" (expected system, user, assistant or tool)");
            }
            Message msg;
            msg.role     = *role;
            msg.content  = opt_string(m, "content").value_or("");
            msg.thinking = opt_string(m, "thinking").value_or("");
            msg.tool_name    = opt_string(m, "tool_name").value_or("");
            msg.tool_call_id = opt_string(m, "tool_call_id").value_or("");
            if (auto tc = m.find("tool_calls"); tc != m.end()) msg.tool_calls = decode_tool_calls(*tc, where);
            p.messages.push_back(std::move(msg));
        }
    }
    if (auto it = body.find("tools"); it != body.end()) p.tools = decode_tools(*it);
    // The messages were all checked above: attach each one's images.
    auto   images = decode_images(body, PromptInput::Kind::chat, limits);
    size_t next   = 0;
    for (size_t i = 0; i < p.messages.size(); ++i) {
        const auto & m = (*body.find("messages"))[i];
        if (auto im = m.find("images"); im != m.end() && !im->is_null()) p.messages[i].images = std::move(images[next++]);
    }
    // Ollama: a chat with no messages loads the model and answers done_reason "load".
    d.request.load_only = p.messages.empty();
    return d;
}

std::optional<KeepAlive> parse_keep_alive(const json & v) {
    using namespace std::chrono;
    if (v.is_null()) return std::nullopt;
    if (v.is_number()) {
        const double secs = v.get<double>();
        if (!std::isfinite(secs)) throw bad_request("keep_alive must be a finite number of seconds");
        if (secs < 0) return KeepAlive(-1);
        if (secs > 1e9) throw bad_request("keep_alive is too long");
        return duration_cast<KeepAlive>(duration<double>(secs));
    }
    if (!v.is_string()) throw bad_request("keep_alive must be a duration string or a number of seconds");
    const std::string s = v.get<std::string>();
    if (s.empty()) return std::nullopt;
    if (s[0] == '-') return KeepAlive(-1);
    // Durations are short. The bound keeps hostile lengths from std::regex, which recurses per
    // character (a long string overflowed the stack), and from std::stod, which throws
    // std::out_of_range past a double's range (400 digits, or 0.<400 zeros>1s).
    if (s.size() > k_max_keep_alive_chars) throw bad_request("invalid keep_alive duration: longer than " +
                                                             std::to_string(k_max_keep_alive_chars) + " characters");
    static const std::regex whole(R"(^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$|^\d+$)");
    if (!std::regex_match(s, whole)) throw bad_request("invalid keep_alive duration: \"" + s + "\"");
    if (s.find_first_not_of("0123456789") == std::string::npos) {
        return parse_keep_alive(json(std::stod(s)));
    }
    static const std::regex part(R"((\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))");
    double secs = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), part); it != std::sregex_iterator(); ++it) {
        const double n    = std::stod((*it)[1]);
        const auto   unit = (*it)[2].str();
        secs += unit == "h" ? n * 3600 : unit == "m" ? n * 60 : unit == "s" ? n
              : unit == "ms" ? n / 1e3 : (unit == "us" || unit == "µs") ? n / 1e6 : n / 1e9;
    }
    return parse_keep_alive(json(secs));
}

} // namespace specd::api
