#include "prepare/options.h"

#include "core/error.h"
#include "grammar/json_schema.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

namespace specd::prepare {

namespace {

// Ollama options that steer GPU placement or memory locking and that specd does not use
// (num_gpu and main_gpu are read below): accepting them changes no output.
const std::set<std::string> k_placement_options = {
    "low_vram", "f16_kv", "use_mlock", "numa", "vocab_only", "logits_all",
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

} // namespace

void apply_options(const models::Parameters & model_params, const json & request_options, GenerateRequest & req,
                   std::vector<std::string> & warnings) {
    models::Parameters p = model_params;
    models::Parameters over;
    // The model's placement (PARAMETER num_gpu, main_gpu); the request's options below win.
    if (p.num_gpu) req.context.num_gpu = *p.num_gpu < 0 ? std::nullopt : std::optional<int32_t>(*p.num_gpu);
    if (p.main_gpu) req.context.main_gpu = *p.main_gpu;
    for (const auto & [key, value] : request_options.items()) {
        if (value.is_null()) continue; // as Ollama: a null option is an unset one
        if (key == "use_mmap") {
            if (!value.is_boolean()) throw bad_request("option use_mmap must be a boolean");
            req.context.use_mmap = value.get<bool>();
            continue;
        }
        if (key == "num_gpu") {
            // Layers to offload (engine/layer_placement.h); -1 is Ollama's "as many as fit".
            if (!value.is_number_integer() || value.get<int64_t>() < -1 || value.get<int64_t>() > 100000) {
                throw bad_request("option num_gpu must be an integer from -1 (as many layers as fit) to 100000");
            }
            const auto n = value.get<int32_t>();
            req.context.num_gpu = n < 0 ? std::nullopt : std::optional<int32_t>(n);
            continue;
        }
        if (key == "main_gpu") {
            // An index among the offload devices; past the last one is refused at load, where
            // the devices are known.
            if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 1024) {
                throw bad_request("option main_gpu must be an integer from 0 to 1024");
            }
            req.context.main_gpu = value.get<int32_t>();
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

} // namespace specd::prepare
