#include "api/ollama_request.h"

#include "api/tool_json.h"
#include "core/error.h"
#include "grammar/json_schema.h"
#include "templates/ollama_prompt.h"

#include <cmath>
#include <cstdio>
#include <regex>
#include <set>

namespace specd::api {

namespace {

// Ollama options that only steer GPU placement or memory locking: nothing to do on the CPU
// backend, so accepting them changes no output.
const std::set<std::string> k_placement_options = {
    "num_gpu", "main_gpu", "low_vram", "f16_kv", "use_mlock", "numa", "vocab_only", "logits_all",
};

std::string format_bound(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return buf;
}

void check_sampling_range(const char * name, const std::optional<double> & v, double min, double max) {
    if (v && (*v < min || *v > max)) {
        throw bad_request(std::string(name) + " must be between " + format_bound(min) + " and " + format_bound(max));
    }
}

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
    if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(k_max_thinking_budget_chars)) ||
        it->get<int64_t>() < 0 || it->get<int64_t>() > k_max_thinking_budget_chars) {
        throw bad_request("thinking_budget_chars must be an integer between 0 and " + std::to_string(k_max_thinking_budget_chars));
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
std::vector<std::pair<std::string, const json *>> image_arrays(const json & body, PromptSpec::Kind kind) {
    std::vector<std::pair<std::string, const json *>> out;
    const auto add = [&](const json & holder, const std::string & where) {
        auto it = holder.find("images");
        if (it == holder.end() || it->is_null()) return;
        if (!it->is_array()) throw bad_request(where + "images must be an array of base64 strings");
        out.emplace_back(where + "images", &*it);
    };
    if (kind == PromptSpec::Kind::generate) {
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
std::vector<std::vector<ImagePtr>> decode_images(const json & body, PromptSpec::Kind kind,
                                                 const vision::ImageLimits & limits) {
    const auto arrays = image_arrays(body, kind);
    size_t     total  = 0;
    for (const auto & [where, arr] : arrays) total += arr->size();
    vision::check_image_count(total, limits);
    std::vector<std::vector<ImagePtr>> out;
    size_t                             n = 0;
    for (const auto & [where, arr] : arrays) {
        auto & images = out.emplace_back();
        for (const auto & item : *arr) {
            ++n; // images are numbered from 1 in request order in every message
            if (!item.is_string()) throw bad_request(where + " must hold base64 strings");
            const auto bytes = vision::image_bytes_from_base64(item.get_ref<const std::string &>(), limits, n);
            images.push_back(std::make_shared<const vision::DecodedImage>(vision::decode_image(bytes, limits, n)));
        }
    }
    return out;
}

void decode_common(const json & body, DecodedRequest & d, PromptSpec::Kind kind) {
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
        r.generate.grammar              = format_grammar(*it, &d.schema_unenforced);
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

DecodedRequest decode_generate(const json & body, const vision::ImageLimits & limits) {
    DecodedRequest d;
    decode_common(body, d, PromptSpec::Kind::generate);
    PromptSpec & p = d.request.prompt;
    if (auto images = decode_images(body, PromptSpec::Kind::generate, limits); !images.empty()) p.images = std::move(images[0]);
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

DecodedRequest decode_chat(const json & body, const vision::ImageLimits & limits) {
    DecodedRequest d;
    decode_common(body, d, PromptSpec::Kind::chat);
    PromptSpec & p = d.request.prompt;
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
    auto   images = decode_images(body, PromptSpec::Kind::chat, limits);
    size_t next   = 0;
    for (size_t i = 0; i < p.messages.size(); ++i) {
        const auto & m = (*body.find("messages"))[i];
        if (auto im = m.find("images"); im != m.end() && !im->is_null()) p.messages[i].images = std::move(images[next++]);
    }
    // Ollama: a chat with no messages loads the model and answers done_reason "load".
    d.request.load_only = p.messages.empty();
    return d;
}

void apply_options(const models::Parameters & model_params, const json & request_options, GenerateRequest & req,
                   std::vector<std::string> & warnings) {
    models::Parameters p = model_params;
    models::Parameters over;
    for (const auto & [key, value] : request_options.items()) {
        if (value.is_null()) continue; // as Ollama: a null option is an unset one
        if (key == "use_mmap") {
            if (!value.is_boolean()) throw bad_request("option use_mmap must be a boolean");
            req.context.use_mmap = value.get<bool>();
            continue;
        }
        if (k_placement_options.count(key)) continue;
        // Options older Ollama versions had and llama.cpp dropped: ignored, as Ollama ignores
        // them now, and said so unless the value is the one that changes nothing.
        if (key == "tfs_z" || key == "penalize_newline") {
            const bool neutral = key == "tfs_z" ? value.is_number() && value.get<double>() == 1
                                                : value.is_boolean() && !value.get<bool>();
            if (!neutral) warnings.push_back("option " + key + " is not supported (llama.cpp removed it): ignored");
            continue;
        }
        // As Ollama: an option it does not know is logged and ignored, not refused (clients
        // send options of other servers and versions). A known option with a wrong value is.
        if (!models::is_known_parameter(key)) {
            // Quoted as JSON: the name is the client's, and the warning goes to the log too.
            warnings.push_back("option " + json(key).dump() + " is not a known option: ignored");
            continue;
        }
        if (auto err = over.set_json(key, value)) throw bad_request("invalid option: " + *err);
    }
    p.merge_from(over);

    ContextOptions &  c = req.context;
    GenerateOptions & g = req.generate;
    SamplingOptions & s = g.sampling;
    if (p.num_ctx) c.num_ctx = *p.num_ctx;
    if (p.num_batch) c.num_batch = *p.num_batch;
    if (p.num_thread) c.num_thread = *p.num_thread;
    if (c.num_ctx > k_max_num_ctx) {
        throw bad_request("num_ctx must be between 1 and " + std::to_string(k_max_num_ctx));
    }
    if (c.num_thread > 1024) throw bad_request("num_thread must be at most 1024");
    c.num_batch = std::min(c.num_batch, c.num_ctx);

    if (p.num_predict) g.num_predict = *p.num_predict;
    if (g.num_predict > k_max_num_predict) {
        throw bad_request("num_predict must be at most " + std::to_string(k_max_num_predict) +
                          " (or -1 for no limit, -2 to fill the context)");
    }
    if (p.draft_num_predict) g.draft_num_predict = *p.draft_num_predict;
    if (p.draft_depth) g.draft_fixed_k = *p.draft_depth;
    if (p.num_keep) g.num_keep = *p.num_keep < 0 ? c.num_ctx : *p.num_keep;
    if (!p.stop.empty()) g.stop = p.stop;
    // The sampler works in 32-bit floats: these bounds keep every logit finite (1e39 is inf
    // as a float, a logit divided by a repeat_penalty of 1e-40 overflows to inf, -inf/inf is
    // NaN), and an inf or NaN logit leaves nothing to sample.
    check_sampling_range("temperature", p.temperature, 0, k_max_sampling_factor);
    check_sampling_range("repeat_penalty", p.repeat_penalty, 0, k_max_sampling_factor);
    check_sampling_range("presence_penalty", p.presence_penalty, -k_max_sampling_factor, k_max_sampling_factor);
    check_sampling_range("frequency_penalty", p.frequency_penalty, -k_max_sampling_factor, k_max_sampling_factor);
    // Below this a temperature samples the argmax anyway; greedy decoding gives it exactly.
    if (p.temperature) s.temperature = *p.temperature < k_min_temperature ? 0.0f : static_cast<float>(*p.temperature);
    if (p.top_k) s.top_k = *p.top_k;
    if (p.top_p) s.top_p = static_cast<float>(*p.top_p);
    if (p.min_p) s.min_p = static_cast<float>(*p.min_p);
    if (p.typical_p) s.typical_p = static_cast<float>(*p.typical_p);
    if (p.repeat_penalty && *p.repeat_penalty <= 0) throw bad_request("repeat_penalty must be greater than 0 (1 disables it)");
    if (p.repeat_penalty && *p.repeat_penalty < k_min_repeat_penalty) {
        throw bad_request("repeat_penalty must be at least " + format_bound(k_min_repeat_penalty) + " (1 disables it)");
    }
    if (p.repeat_penalty) s.repeat_penalty = static_cast<float>(*p.repeat_penalty);
    // The penalty window is a buffer of that many tokens: a window longer than the context
    // penalizes nothing more, so it is the context.
    if (p.repeat_last_n) s.repeat_last_n = *p.repeat_last_n < 0 ? c.num_ctx : *p.repeat_last_n;
    s.repeat_last_n = std::min(s.repeat_last_n, c.num_ctx);
    if (p.presence_penalty) s.presence_penalty = static_cast<float>(*p.presence_penalty);
    if (p.frequency_penalty) s.frequency_penalty = static_cast<float>(*p.frequency_penalty);
    if (p.seed) s.seed = *p.seed;
    if (p.mirostat) s.mirostat = *p.mirostat;
    if (p.mirostat_tau) s.mirostat_tau = static_cast<float>(std::min(*p.mirostat_tau, k_max_sampling_factor));
    if (p.mirostat_eta) s.mirostat_eta = static_cast<float>(std::min(*p.mirostat_eta, k_max_sampling_factor));
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

std::string format_grammar(const json & format, std::vector<std::string> * unenforced) {
    if (format.is_null()) return "";
    if (format.is_string()) {
        const auto s = format.get<std::string>();
        if (s.empty()) return "";
        if (s == "json") return grammar::json_object_grammar();
        throw bad_request("invalid format: \"" + s + "\"; expected \"json\" or a valid JSON Schema object");
    }
    if (format.is_object()) return grammar::schema_to_grammar(format.dump(), grammar::SchemaLimits{}, unenforced);
    throw bad_request("invalid format: " + format.dump() + "; expected \"json\" or a valid JSON Schema object");
}

} // namespace specd::api
