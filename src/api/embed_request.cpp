#include "api/embed_request.h"

#include "api/ollama_request.h"
#include "api/openai_request.h"
#include "core/base64.h"
#include "core/embedding.h"

#include <cstring>

namespace specd::api {

namespace {

// A refusal naming `field`: as a ParamError for OpenAI's shape, else a plain bad_request.
[[noreturn]] void refuse(bool openai, const char * field, const std::string & message) {
    if (openai) throw ParamError(field, message);
    throw bad_request(message);
}

// `input`: a string (empty: no inputs, the model only loads) or an array of strings.
std::vector<std::string> read_inputs(const json & body, const char * field, bool openai) {
    const auto fail = [&](const std::string & message) { refuse(openai, field, message); };
    std::vector<std::string> inputs;
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) {
        if (openai) fail(std::string(field) + " is required");
        return inputs;
    }
    if (it->is_string()) {
        if (!it->get_ref<const std::string &>().empty()) inputs.push_back(it->get<std::string>());
        return inputs;
    }
    if (!it->is_array()) fail(std::string(field) + " must be a string or an array of strings");
    if (it->size() > k_max_embed_inputs) {
        fail(std::string(field) + " has " + std::to_string(it->size()) + " items; at most " +
                   std::to_string(k_max_embed_inputs) + " inputs per request");
    }
    for (size_t i = 0; i < it->size(); ++i) {
        const json & v = (*it)[i];
        if (!v.is_string()) {
            fail(std::string(field) + "[" + std::to_string(i) + "] must be a string" +
                       (openai && v.is_number_integer() ? " (token arrays are not supported)" : ""));
        }
        inputs.push_back(v.get<std::string>());
    }
    return inputs;
}

std::optional<int32_t> read_dimensions(const json & body, bool openai) {
    const auto it = body.find("dimensions");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > k_max_embed_dimensions) {
        refuse(openai, "dimensions", "dimensions must be an integer from 1 to the model's embedding length");
    }
    return it->get<int32_t>();
}

void read_common(const json & body, EmbedRequest & r) {
    if (auto it = body.find("keep_alive"); it != body.end()) r.request.keep_alive = parse_keep_alive(*it);
    r.options = json::object();
    if (auto it = body.find("options"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) throw bad_request("options must be an object");
        r.options = *it;
    }
}

std::string model_name(const json & body) {
    auto name = opt_string(body, "model");
    if (!name || name->empty()) throw bad_request("model is required");
    return *name;
}

json floats_json(const std::vector<float> & v) {
    json out = json::array();
    for (float x : v) out.push_back(x);
    return out;
}

// OpenAI's base64 encoding: the little-endian float32 array's bytes.
std::string floats_base64(const std::vector<float> & v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return encode_base64(bytes);
}

} // namespace

EmbedRequest decode_embed(const json & body) {
    EmbedRequest r;
    r.endpoint = EmbedEndpoint::embed;
    r.model    = model_name(body);
    EmbedInput input;
    input.inputs = read_inputs(body, "input", false);
    if (auto t = opt_bool(body, "truncate")) input.truncate = *t;
    r.dimensions = read_dimensions(body, false);
    read_common(body, r);
    r.request.load_only = input.inputs.empty();
    r.request.embed     = std::move(input);
    return r;
}

EmbedRequest decode_embeddings_legacy(const json & body) {
    EmbedRequest r;
    r.endpoint = EmbedEndpoint::embeddings_legacy;
    r.model    = model_name(body);
    EmbedInput input;
    if (auto p = opt_string(body, "prompt"); p && !p->empty()) input.inputs.push_back(*p);
    read_common(body, r);
    r.request.load_only = input.inputs.empty(); // as Ollama: an empty prompt loads the model
    r.request.embed     = std::move(input);
    return r;
}

EmbedRequest decode_openai_embed(const json & body) {
    EmbedRequest r;
    r.endpoint = EmbedEndpoint::openai;
    const auto model = body.find("model");
    if (model == body.end() || !model->is_string() || model->get_ref<const std::string &>().empty()) {
        throw ParamError("model", "model is required");
    }
    r.model = model->get<std::string>();
    EmbedInput input;
    input.inputs  = read_inputs(body, "input", true);
    r.dimensions = read_dimensions(body, true);
    if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
        if (!it->is_string() || (*it != "float" && *it != "base64")) {
            throw ParamError("encoding_format", "encoding_format must be \"float\" or \"base64\"");
        }
        r.base64 = *it == "base64";
    }
    r.options           = json::object();
    r.request.load_only = input.inputs.empty();
    r.request.embed     = std::move(input);
    return r;
}

std::vector<float> shape_embedding(std::vector<float> v, std::optional<int32_t> dimensions, bool normalize) {
    if (dimensions) {
        if (size_t(*dimensions) > v.size()) {
            throw bad_request("dimensions " + std::to_string(*dimensions) + " is larger than the model's embedding length " +
                              std::to_string(v.size()));
        }
        v.resize(size_t(*dimensions));
    }
    if (normalize) normalize_l2(v);
    return v;
}

json embed_answer_json(const EmbedRequest & r, scheduler::DoneInfo done) {
    const bool normalize = r.endpoint != EmbedEndpoint::embeddings_legacy; // Ollama's legacy endpoint does not
    for (auto & v : done.embeddings) v = shape_embedding(std::move(v), r.dimensions, normalize);
    const int32_t tokens = done.result.stats.prompt_eval_count;
    switch (r.endpoint) {
        case EmbedEndpoint::embed: {
            json embeddings = json::array();
            for (const auto & v : done.embeddings) embeddings.push_back(floats_json(v));
            return {{"model", r.model}, {"embeddings", std::move(embeddings)}, {"total_duration", done.total_ns},
                    {"load_duration", done.load_ns}, {"prompt_eval_count", tokens}};
        }
        case EmbedEndpoint::embeddings_legacy:
            return {{"embedding", done.embeddings.empty() ? json::array() : floats_json(done.embeddings[0])}};
        case EmbedEndpoint::openai: {
            json data = json::array();
            for (size_t i = 0; i < done.embeddings.size(); ++i) {
                json e = r.base64 ? json(floats_base64(done.embeddings[i])) : floats_json(done.embeddings[i]);
                data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(e)}});
            }
            return {{"object", "list"}, {"data", std::move(data)}, {"model", r.model},
                    {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
        }
    }
    return nullptr;
}

} // namespace specd::api
