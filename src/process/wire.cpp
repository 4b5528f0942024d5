#include "process/wire.h"

#include "core/base64.h"
#include "core/utf8.h"

#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace specd::process {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const char * field, const std::string & why) {
    throw std::runtime_error(std::string("field \"") + field + "\": " + why);
}

// Reads with the checks of this file, and says which message failed: "wire: request: field
// "top_k": must be an integer".
template <class F> auto reading(const char * what, F && read) {
    try {
        return read();
    } catch (const std::exception & e) {
        // nlohmann's own exceptions too, though the checks below should leave none.
        throw std::runtime_error(std::string("wire: ") + what + ": " + e.what());
    }
}

// Values

const json & at(const json & obj, const char * key) {
    if (!obj.is_object()) fail(key, "its parent is not an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(key, "missing");
    return *it;
}

template <class T> T as_int(const json & v, const char * name) {
    // nlohmann keeps a non-negative number as unsigned and a negative one as signed; a
    // number with a fraction or exponent is a float, which get<T>() would silently truncate.
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (!std::in_range<T>(u)) fail(name, std::to_string(u) + " is out of range");
        return static_cast<T>(u);
    }
    if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if (!std::in_range<T>(i)) fail(name, std::to_string(i) + " is out of range");
        return static_cast<T>(i);
    }
    fail(name, "must be an integer");
}

bool as_bool(const json & v, const char * name) {
    if (!v.is_boolean()) fail(name, "must be a boolean");
    return v.get<bool>();
}

// JSON has no inf or nan (nlohmann would write null): they travel as names.
json real_to_json(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

float as_real(const json & v, const char * name) {
    if (v.is_number()) return v.get<float>(); // a finite float's double, so exact
    if (v.is_string()) {
        const std::string & s = v.get_ref<const std::string &>();
        if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<float>::infinity();
        if (s == "-inf") return -std::numeric_limits<float>::infinity();
    }
    fail(name, "must be a number, \"inf\", \"-inf\" or \"nan\"");
}

bool valid_utf8(const std::string & s) {
    Utf8Validator v;
    return v.feed(s) && !v.mid_character();
}

// nlohmann refuses to write a string that is not valid UTF-8; such bytes go as base64.
json text_to_json(const std::string & s) {
    if (valid_utf8(s)) return s;
    return {{"base64", encode_base64(std::span(reinterpret_cast<const uint8_t *>(s.data()), s.size()))}};
}

std::string as_text(const json & v, const char * name) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.size() == 1 && v.contains("base64") && v["base64"].is_string()) {
        auto bytes = decode_base64(v["base64"].get_ref<const std::string &>());
        if (!bytes) fail(name, "invalid base64");
        return std::string(bytes->begin(), bytes->end());
    }
    fail(name, "must be a string");
}

json path_to_json(const std::filesystem::path & p) { return text_to_json(p.string()); }

std::filesystem::path as_path(const json & v, const char * name) { return std::filesystem::path(as_text(v, name)); }

const json & as_array(const json & v, const char * name) {
    if (!v.is_array()) fail(name, "must be an array");
    return v;
}

const json & as_object(const json & v, const char * name) {
    if (!v.is_object()) fail(name, "must be an object");
    return v;
}

// Fields of an object, by key.

template <class T> T int_field(const json & obj, const char * key) { return as_int<T>(at(obj, key), key); }
bool        bool_field(const json & obj, const char * key) { return as_bool(at(obj, key), key); }
float       real_field(const json & obj, const char * key) { return as_real(at(obj, key), key); }
std::string text_field(const json & obj, const char * key) { return as_text(at(obj, key), key); }
const json & array_field(const json & obj, const char * key) { return as_array(at(obj, key), key); }
const json & object_field(const json & obj, const char * key) { return as_object(at(obj, key), key); }

// null: unset.
template <class F> auto opt_field(const json & obj, const char * key, F as) {
    const json & v = at(obj, key);
    using T = decltype(as(v, key));
    return v.is_null() ? std::optional<T>() : std::optional<T>(as(v, key));
}

template <class T, class F> json opt_to_json(const std::optional<T> & v, F to) {
    return v ? json(to(*v)) : json(nullptr);
}

template <class F> auto list_field(const json & obj, const char * key, F as) {
    const json & a = array_field(obj, key);
    std::vector<decltype(as(a, key))> out;
    out.reserve(a.size());
    for (const json & e : a) out.push_back(as(e, key));
    return out;
}

template <class T> std::vector<T> int_list(const json & obj, const char * key) {
    return list_field(obj, key, as_int<T>);
}

std::vector<std::string> text_list(const json & obj, const char * key) { return list_field(obj, key, as_text); }

json texts_to_json(const std::vector<std::string> & v) {
    json out = json::array();
    for (const std::string & s : v) out.push_back(text_to_json(s));
    return out;
}

// Enums, by name

template <class E, size_t N>
E enum_from_json(const json & v, const char * name, const std::array<E, N> & all, const char * (*name_of)(E)) {
    if (!v.is_string()) fail(name, "must be a name");
    const std::string & s = v.get_ref<const std::string &>();
    for (E e : all) {
        if (s == name_of(e)) return e;
    }
    fail(name, "unknown name \"" + s + "\"");
}

template <class E, size_t N>
E enum_field(const json & obj, const char * key, const std::array<E, N> & all, const char * (*name_of)(E)) {
    return enum_from_json(at(obj, key), key, all, name_of);
}

// Every value of each enum, in order, so that a name reads back to its value.
template <class E, size_t N> constexpr std::array<E, N> all_of() {
    std::array<E, N> out{};
    for (size_t i = 0; i < N; ++i) out[i] = static_cast<E>(i);
    return out;
}

constexpr auto k_done_reasons  = std::array{DoneReason::stop, DoneReason::length, DoneReason::load, DoneReason::unload};
constexpr auto k_error_kinds   = std::array{ErrorKind::bad_request, ErrorKind::not_found, ErrorKind::busy,
                                            ErrorKind::cancelled,   ErrorKind::upstream,  ErrorKind::internal};
constexpr auto k_event_kinds   = std::array{scheduler::Event::Kind::text, scheduler::Event::Kind::done,
                                            scheduler::Event::Kind::error};
constexpr auto k_prompt_kinds  = std::array{PromptInput::Kind::generate, PromptInput::Kind::chat};
constexpr auto k_buckets       = all_of<memory::Bucket, memory::bucket_count>();
constexpr auto k_owner_kinds   = all_of<memory::OwnerKind, memory::owner_kind_count>();

const char * error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::bad_request: return "bad_request";
        case ErrorKind::not_found:   return "not_found";
        case ErrorKind::busy:        return "busy";
        case ErrorKind::cancelled:   return "cancelled";
        case ErrorKind::upstream:    return "upstream";
        case ErrorKind::internal:    return "internal";
    }
    return "unknown";
}

const char * event_kind_name(scheduler::Event::Kind kind) {
    switch (kind) {
        case scheduler::Event::Kind::text:  return "text";
        case scheduler::Event::Kind::done:  return "done";
        case scheduler::Event::Kind::error: return "error";
    }
    return "unknown";
}

const char * prompt_kind_name(PromptInput::Kind kind) {
    switch (kind) {
        case PromptInput::Kind::generate: return "generate";
        case PromptInput::Kind::chat:     return "chat";
    }
    return "unknown";
}

// An array indexed by an enum, as an object keyed by the enum's names: each name once, no
// other name.
template <class E, class T, size_t N, class F>
json named_array_to_json(const std::array<T, N> & values, const char * (*name_of)(E), F to) {
    json out = json::object();
    for (size_t i = 0; i < N; ++i) out[name_of(static_cast<E>(i))] = to(values[i]);
    return out;
}

template <class E, class T, size_t N, class F>
void named_array_from_json(const json & obj, const char * key, const char * (*name_of)(E), F as, std::array<T, N> & out) {
    const json &        o = object_field(obj, key);
    std::array<bool, N> seen{};
    for (auto it = o.begin(); it != o.end(); ++it) {
        size_t i = 0;
        while (i < N && it.key() != name_of(static_cast<E>(i))) ++i;
        if (i == N) fail(key, "unknown name \"" + it.key() + "\"");
        out[i]  = as(it.value(), key);
        seen[i] = true;
    }
    for (size_t i = 0; i < N; ++i) {
        if (!seen[i]) fail(key, std::string("\"") + name_of(static_cast<E>(i)) + "\" is missing");
    }
}

// Images: one table entry and one blob per distinct image, referred to by table index.

class ImageWriter {
  public:
    explicit ImageWriter(std::vector<std::string> & blobs) : blobs_(blobs) {}

    json ref(const ImagePtr & image) {
        if (!image) return nullptr;
        auto [it, added] = index_.try_emplace(image.get(), table_.size());
        if (added) add(*image);
        return it->second;
    }

    json refs(const std::vector<ImagePtr> & images) {
        json out = json::array();
        for (const ImagePtr & image : images) out.push_back(ref(image));
        return out;
    }

    const json & table() const { return table_; }

  private:
    void add(const DecodedImage & image) {
        if (image.width < 0 || image.height < 0) throw std::runtime_error("wire: an image has a negative size");
        const std::span<const uint8_t> rgb = image.rgb();
        if (!image.pixels && !rgb.empty()) throw std::runtime_error("wire: an image has no pixels");
        std::string & blob = blobs_.emplace_back();
        if (!rgb.empty()) blob.assign(reinterpret_cast<const char *>(rgb.data()), rgb.size());
        table_.push_back({{"width", image.width},
                          {"height", image.height},
                          {"identity", text_to_json(image.identity)},
                          {"blob", blobs_.size() - 1}});
    }

    std::vector<std::string> &                        blobs_;
    std::unordered_map<const DecodedImage *, size_t> index_; // table index of each image written
    json                                              table_ = json::array();
};

// What vision/ allocates goes back through stbi_image_free; what we allocate, through delete[].
void delete_pixels(uint8_t * p) { delete[] p; }

std::vector<ImagePtr> images_from_json(const json & obj, const char * key, const std::vector<std::string> & blobs) {
    std::vector<ImagePtr> table;
    for (const json & e : array_field(obj, key)) {
        auto image    = std::make_shared<DecodedImage>();
        image->width  = int_field<int>(e, "width");
        image->height = int_field<int>(e, "height");
        if (image->width < 0 || image->height < 0) fail("width", "an image has a negative size");
        image->identity    = text_field(e, "identity");
        const size_t index = int_field<size_t>(e, "blob");
        if (index >= blobs.size()) {
            fail("blob", "index " + std::to_string(index) + " is past the " + std::to_string(blobs.size()) + " blobs");
        }
        const std::string & blob = blobs[index];
        const size_t        size = size_t(image->width) * size_t(image->height) * 3;
        if (blob.size() != size) {
            fail("blob", std::to_string(blob.size()) + " bytes for a " + std::to_string(image->width) + "x" +
                             std::to_string(image->height) + " image, which needs " + std::to_string(size));
        }
        image->pixels = PixelBuffer(new uint8_t[size], &delete_pixels);
        if (size > 0) std::memcpy(image->pixels.get(), blob.data(), size);
        table.push_back(std::move(image));
    }
    return table;
}

std::vector<ImagePtr> image_refs(const json & obj, const char * key, const std::vector<ImagePtr> & table) {
    return list_field(obj, key, [&](const json & v, const char * name) -> ImagePtr {
        if (v.is_null()) return nullptr;
        const size_t i = as_int<size_t>(v, name);
        if (i >= table.size()) fail(name, "image " + std::to_string(i) + " is not in the table");
        return table[i];
    });
}

// The request

json model_to_json(const ModelFiles & m) {
    json adapters = json::array();
    for (const auto & a : m.adapters) adapters.push_back(path_to_json(a));
    return {{"name", text_to_json(m.name)},
            {"gguf", path_to_json(m.gguf)},
            {"digest", text_to_json(m.digest)},
            {"system", text_to_json(m.system)},
            {"draft", opt_to_json(m.draft, path_to_json)},
            {"projector", opt_to_json(m.projector, path_to_json)},
            {"template_text", opt_to_json(m.template_text, text_to_json)},
            {"adapters", std::move(adapters)}};
}

ModelFiles model_from_json(const json & j) {
    ModelFiles m;
    m.name          = text_field(j, "name");
    m.gguf          = as_path(at(j, "gguf"), "gguf");
    m.digest        = text_field(j, "digest");
    m.system        = text_field(j, "system");
    m.draft         = opt_field(j, "draft", as_path);
    m.projector     = opt_field(j, "projector", as_path);
    m.template_text = opt_field(j, "template_text", as_text);
    m.adapters      = list_field(j, "adapters", as_path);
    return m;
}

json tool_calls_to_json(const std::vector<ToolCall> & calls) {
    json out = json::array();
    for (const ToolCall & c : calls) {
        out.push_back({{"name", text_to_json(c.name)}, {"arguments", text_to_json(c.arguments)}, {"id", text_to_json(c.id)}});
    }
    return out;
}

ToolCall tool_call_from_json(const json & j, const char *) {
    return {text_field(j, "name"), text_field(j, "arguments"), text_field(j, "id")};
}

json message_to_json(const Message & m, ImageWriter & images) {
    return {{"role", text_to_json(m.role)},
            {"content", text_to_json(m.content)},
            {"images", images.refs(m.images)},
            {"thinking", text_to_json(m.thinking)},
            {"tool_calls", tool_calls_to_json(m.tool_calls)},
            {"tool_name", text_to_json(m.tool_name)},
            {"tool_call_id", text_to_json(m.tool_call_id)}};
}

Message message_from_json(const json & j, const std::vector<ImagePtr> & images) {
    Message m;
    m.role         = text_field(j, "role");
    m.content      = text_field(j, "content");
    m.images       = image_refs(j, "images", images);
    m.thinking     = text_field(j, "thinking");
    m.tool_calls   = list_field(j, "tool_calls", tool_call_from_json);
    m.tool_name    = text_field(j, "tool_name");
    m.tool_call_id = text_field(j, "tool_call_id");
    return m;
}

json think_to_json(const ThinkSetting & t) { return {{"enabled", t.enabled}, {"effort", text_to_json(t.effort)}}; }

ThinkSetting think_from_json(const json & j, const char *) { return {bool_field(j, "enabled"), text_field(j, "effort")}; }

json prompt_to_json(const PromptInput & p, ImageWriter & images) {
    json messages = json::array();
    for (const Message & m : p.messages) messages.push_back(message_to_json(m, images));
    json tools = json::array();
    for (const Tool & t : p.tools) {
        tools.push_back({{"name", text_to_json(t.name)},
                         {"description", text_to_json(t.description)},
                         {"parameters", text_to_json(t.parameters)}});
    }
    return {{"kind", prompt_kind_name(p.kind)},
            {"prompt", text_to_json(p.prompt)},
            {"system", text_to_json(p.system)},
            {"suffix", text_to_json(p.suffix)},
            {"raw", p.raw},
            {"messages", std::move(messages)},
            {"context", p.context},
            {"images", images.refs(p.images)},
            {"template_text", opt_to_json(p.template_text, text_to_json)},
            {"tools", std::move(tools)},
            {"tool_required", p.tool_required},
            {"tool_forced", text_to_json(p.tool_forced)},
            {"think", opt_to_json(p.think, think_to_json)}};
}

PromptInput prompt_from_json(const json & j, const std::vector<ImagePtr> & images) {
    PromptInput p;
    p.kind   = enum_field(j, "kind", k_prompt_kinds, prompt_kind_name);
    p.prompt = text_field(j, "prompt");
    p.system = text_field(j, "system");
    p.suffix = text_field(j, "suffix");
    p.raw    = bool_field(j, "raw");
    for (const json & m : array_field(j, "messages")) p.messages.push_back(message_from_json(m, images));
    p.context       = int_list<int32_t>(j, "context");
    p.images        = image_refs(j, "images", images);
    p.template_text = opt_field(j, "template_text", as_text);
    p.tools         = list_field(j, "tools", [](const json & t, const char *) {
        return Tool{text_field(t, "name"), text_field(t, "description"), text_field(t, "parameters")};
    });
    p.tool_required = bool_field(j, "tool_required");
    p.tool_forced   = text_field(j, "tool_forced");
    p.think         = opt_field(j, "think", think_from_json);
    return p;
}

json context_to_json(const ContextOptions & c) {
    return {{"num_ctx", c.num_ctx},
            {"num_batch", c.num_batch},
            {"num_thread", c.num_thread},
            {"use_mmap", opt_to_json(c.use_mmap, [](bool b) { return b; })},
            {"num_gpu", opt_to_json(c.num_gpu, [](int32_t n) { return n; })},
            {"main_gpu", opt_to_json(c.main_gpu, [](int32_t n) { return n; })}};
}

ContextOptions context_from_json(const json & j) {
    ContextOptions c;
    c.num_ctx    = int_field<int32_t>(j, "num_ctx");
    c.num_batch  = int_field<int32_t>(j, "num_batch");
    c.num_thread = int_field<int32_t>(j, "num_thread");
    c.use_mmap   = opt_field(j, "use_mmap", as_bool);
    c.num_gpu    = opt_field(j, "num_gpu", as_int<int32_t>);
    c.main_gpu   = opt_field(j, "main_gpu", as_int<int32_t>);
    return c;
}

json sampling_to_json(const SamplingOptions & s) {
    json bias = json::array();
    for (const auto & [token, value] : s.logit_bias) bias.push_back({token, real_to_json(value)});
    return {{"temperature", real_to_json(s.temperature)},
            {"top_k", s.top_k},
            {"top_p", real_to_json(s.top_p)},
            {"min_p", real_to_json(s.min_p)},
            {"typical_p", real_to_json(s.typical_p)},
            {"repeat_penalty", real_to_json(s.repeat_penalty)},
            {"repeat_last_n", s.repeat_last_n},
            {"presence_penalty", real_to_json(s.presence_penalty)},
            {"frequency_penalty", real_to_json(s.frequency_penalty)},
            {"seed", s.seed},
            {"mirostat", s.mirostat},
            {"mirostat_tau", real_to_json(s.mirostat_tau)},
            {"mirostat_eta", real_to_json(s.mirostat_eta)},
            {"logit_bias", std::move(bias)}};
}

SamplingOptions sampling_from_json(const json & j) {
    SamplingOptions s;
    s.temperature       = real_field(j, "temperature");
    s.top_k             = int_field<int32_t>(j, "top_k");
    s.top_p             = real_field(j, "top_p");
    s.min_p             = real_field(j, "min_p");
    s.typical_p         = real_field(j, "typical_p");
    s.repeat_penalty    = real_field(j, "repeat_penalty");
    s.repeat_last_n     = int_field<int32_t>(j, "repeat_last_n");
    s.presence_penalty  = real_field(j, "presence_penalty");
    s.frequency_penalty = real_field(j, "frequency_penalty");
    s.seed              = int_field<int64_t>(j, "seed");
    s.mirostat          = int_field<int32_t>(j, "mirostat");
    s.mirostat_tau      = real_field(j, "mirostat_tau");
    s.mirostat_eta      = real_field(j, "mirostat_eta");
    s.logit_bias        = list_field(j, "logit_bias", [](const json & pair, const char * name) {
        if (!pair.is_array() || pair.size() != 2) fail(name, "each entry must be [token, bias]");
        return std::pair<int32_t, float>(as_int<int32_t>(pair[0], name), as_real(pair[1], name));
    });
    return s;
}

json generate_to_json(const GenerateOptions & g) {
    return {{"sampling", sampling_to_json(g.sampling)},
            {"num_predict", g.num_predict},
            {"num_keep", g.num_keep},
            {"stop", texts_to_json(g.stop)},
            {"truncate", g.truncate},
            {"shift", g.shift},
            {"grammar", text_to_json(g.grammar)},
            {"end_on_complete_json", g.end_on_complete_json},
            {"draft_num_predict", g.draft_num_predict},
            {"draft_fixed_k", opt_to_json(g.draft_fixed_k, [](int32_t k) { return k; })},
            {"rejection_sampling", g.rejection_sampling},
            {"logprobs", g.logprobs}};
}

GenerateOptions generate_from_json(const json & j) {
    GenerateOptions g;
    g.sampling             = sampling_from_json(object_field(j, "sampling"));
    g.num_predict          = int_field<int32_t>(j, "num_predict");
    g.num_keep             = int_field<int32_t>(j, "num_keep");
    g.stop                 = text_list(j, "stop");
    g.truncate             = bool_field(j, "truncate");
    g.shift                = bool_field(j, "shift");
    g.grammar              = text_field(j, "grammar");
    g.end_on_complete_json = bool_field(j, "end_on_complete_json");
    g.draft_num_predict    = int_field<int32_t>(j, "draft_num_predict");
    g.draft_fixed_k        = opt_field(j, "draft_fixed_k", as_int<int32_t>);
    g.rejection_sampling   = bool_field(j, "rejection_sampling");
    g.logprobs             = int_field<int32_t>(j, "logprobs");
    return g;
}

json embed_to_json(const EmbedInput & e) { return {{"inputs", texts_to_json(e.inputs)}, {"truncate", e.truncate}}; }

EmbedInput embed_from_json(const json & j, const char *) { return {text_list(j, "inputs"), bool_field(j, "truncate")}; }

// Events

json depth_stats_to_json(const spec::DepthStats & d) {
    return {{"rounds", d.rounds},
            {"drafted", d.drafted},
            {"accepted", d.accepted},
            {"k_sum", d.k_sum},
            {"zero_k_rounds", d.zero_k_rounds},
            {"probes", d.probes},
            {"drafted_per_position", d.drafted_per_position},
            {"accepted_per_position", d.accepted_per_position}};
}

spec::DepthStats depth_stats_from_json(const json & j) {
    spec::DepthStats d;
    d.rounds                = int_field<int64_t>(j, "rounds");
    d.drafted               = int_field<int64_t>(j, "drafted");
    d.accepted              = int_field<int64_t>(j, "accepted");
    d.k_sum                 = int_field<int64_t>(j, "k_sum");
    d.zero_k_rounds         = int_field<int64_t>(j, "zero_k_rounds");
    d.probes                = int_field<int64_t>(j, "probes");
    d.drafted_per_position  = int_list<int64_t>(j, "drafted_per_position");
    d.accepted_per_position = int_list<int64_t>(j, "accepted_per_position");
    return d;
}

json stats_to_json(const GenerateStats & s) {
    return {{"prompt_eval_count", s.prompt_eval_count},
            {"prompt_count", s.prompt_count},
            {"prompt_eval_ns", s.prompt_eval_ns},
            {"eval_count", s.eval_count},
            {"eval_ns", s.eval_ns},
            {"image_count", s.image_count},
            {"image_tokens", s.image_tokens},
            {"image_encode_ns", s.image_encode_ns},
            {"image_decode_ns", s.image_decode_ns}};
}

GenerateStats stats_from_json(const json & j) {
    GenerateStats s;
    s.prompt_eval_count = int_field<int32_t>(j, "prompt_eval_count");
    s.prompt_count      = int_field<int32_t>(j, "prompt_count");
    s.prompt_eval_ns    = int_field<int64_t>(j, "prompt_eval_ns");
    s.eval_count        = int_field<int32_t>(j, "eval_count");
    s.eval_ns           = int_field<int64_t>(j, "eval_ns");
    s.image_count       = int_field<int32_t>(j, "image_count");
    s.image_tokens      = int_field<int32_t>(j, "image_tokens");
    s.image_encode_ns   = int_field<int64_t>(j, "image_encode_ns");
    s.image_decode_ns   = int_field<int64_t>(j, "image_decode_ns");
    return s;
}

json grammar_drafts_to_json(const GrammarDraftStats & g) {
    return {{"forced", g.forced},
            {"forced_accepted", g.forced_accepted},
            {"truncated_rounds", g.truncated_rounds},
            {"truncated_tokens", g.truncated_tokens},
            {"no_legal_draft", g.no_legal_draft},
            {"grammar_ns", g.grammar_ns}};
}

GrammarDraftStats grammar_drafts_from_json(const json & j) {
    GrammarDraftStats g;
    g.forced           = int_field<int64_t>(j, "forced");
    g.forced_accepted  = int_field<int64_t>(j, "forced_accepted");
    g.truncated_rounds = int_field<int64_t>(j, "truncated_rounds");
    g.truncated_tokens = int_field<int64_t>(j, "truncated_tokens");
    g.no_legal_draft   = int_field<int64_t>(j, "no_legal_draft");
    g.grammar_ns       = int_field<int64_t>(j, "grammar_ns");
    return g;
}

json result_to_json(const engine::GenerateResult & r) {
    return {{"reason", done_reason_name(r.reason)},
            {"stats", stats_to_json(r.stats)},
            {"speculation", depth_stats_to_json(r.speculation)},
            {"grammar_drafts", grammar_drafts_to_json(r.grammar_drafts)},
            {"k_histogram", r.k_histogram},
            {"context", r.context},
            {"drafter", r.drafter}};
}

engine::GenerateResult result_from_json(const json & j) {
    engine::GenerateResult r;
    r.reason         = enum_field(j, "reason", k_done_reasons, done_reason_name);
    r.stats          = stats_from_json(object_field(j, "stats"));
    r.speculation    = depth_stats_from_json(object_field(j, "speculation"));
    r.grammar_drafts = grammar_drafts_from_json(object_field(j, "grammar_drafts"));
    r.k_histogram    = int_list<int64_t>(j, "k_histogram");
    r.context        = int_list<int32_t>(j, "context");
    r.drafter        = text_field(j, "drafter");
    return r;
}

// Embeddings are thousands of floats per input: one blob of their little-endian bits (exact,
// nan payloads included, and a fraction of the size and parsing time of JSON numbers), and
// the length of each vector.
json embeddings_to_json(const std::vector<std::vector<float>> & vectors, std::vector<std::string> & blobs) {
    if (vectors.empty()) return {{"sizes", json::array()}, {"blob", nullptr}};
    json        sizes = json::array();
    std::string bytes;
    for (const auto & v : vectors) {
        sizes.push_back(v.size());
        for (float f : v) {
            const uint32_t bits = std::bit_cast<uint32_t>(f);
            for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(static_cast<uint8_t>(bits >> (8 * i))));
        }
    }
    blobs.push_back(std::move(bytes));
    return {{"sizes", std::move(sizes)}, {"blob", blobs.size() - 1}};
}

std::vector<std::vector<float>> embeddings_from_json(const json & j, const std::vector<std::string> & blobs) {
    const std::vector<size_t> sizes = int_list<size_t>(j, "sizes");
    if (sizes.empty()) return {};
    const size_t index = int_field<size_t>(j, "blob");
    if (index >= blobs.size()) {
        fail("blob", "index " + std::to_string(index) + " is past the " + std::to_string(blobs.size()) + " blobs");
    }
    const std::string & blob  = blobs[index];
    size_t              total = 0;
    for (size_t n : sizes) {
        if (n > blob.size() / 4 - total) fail("sizes", "more floats than the blob's " + std::to_string(blob.size()) + " bytes");
        total += n;
    }
    if (total * 4 != blob.size()) fail("blob", std::to_string(blob.size()) + " bytes for " + std::to_string(total) + " floats");

    std::vector<std::vector<float>> out;
    out.reserve(sizes.size());
    const auto * p = reinterpret_cast<const unsigned char *>(blob.data());
    for (size_t n : sizes) {
        std::vector<float> & v = out.emplace_back();
        v.reserve(n);
        for (size_t i = 0; i < n; ++i, p += 4) {
            const uint32_t bits = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
            v.push_back(std::bit_cast<float>(bits));
        }
    }
    return out;
}

json logprobs_to_json(const std::vector<TokenLogprob> & logprobs) {
    json out = json::array();
    for (const TokenLogprob & t : logprobs) {
        json top = json::array();
        for (const TokenLogprobAlt & a : t.top) {
            top.push_back({{"token", text_to_json(a.token)}, {"logprob", real_to_json(a.logprob)}});
        }
        out.push_back({{"token", text_to_json(t.token)}, {"logprob", real_to_json(t.logprob)}, {"top", std::move(top)}});
    }
    return out;
}

TokenLogprob logprob_from_json(const json & j, const char *) {
    TokenLogprob t;
    t.token   = text_field(j, "token");
    t.logprob = real_field(j, "logprob");
    t.top     = list_field(j, "top", [](const json & a, const char *) {
        return TokenLogprobAlt{text_field(a, "token"), real_field(a, "logprob")};
    });
    return t;
}

// The loaded model

json live_to_json(const engine::LiveCounters & c) {
    return {{"generated", c.generated},
            {"rounds", c.rounds},
            {"drafted", c.drafted},
            {"accepted", c.accepted},
            {"forced", c.forced},
            {"forced_accepted", c.forced_accepted},
            {"draft_decodes", c.draft_decodes},
            {"depth", c.depth}};
}

engine::LiveCounters live_from_json(const json & j) {
    engine::LiveCounters c;
    c.generated       = int_field<int64_t>(j, "generated");
    c.rounds          = int_field<int64_t>(j, "rounds");
    c.drafted         = int_field<int64_t>(j, "drafted");
    c.accepted        = int_field<int64_t>(j, "accepted");
    c.forced          = int_field<int64_t>(j, "forced");
    c.forced_accepted = int_field<int64_t>(j, "forced_accepted");
    c.draft_decodes   = int_field<int64_t>(j, "draft_decodes");
    c.depth           = int_list<int64_t>(j, "depth");
    return c;
}

// The ledger

json owner_to_json(const memory::Owner & o) {
    return {{"kind", memory::owner_kind_name(o.kind)}, {"id", o.id}, {"label", text_to_json(o.label)}};
}

memory::Owner owner_from_json(const json & j) {
    memory::Owner o;
    o.kind  = enum_field(j, "kind", k_owner_kinds, memory::owner_kind_name);
    o.id    = int_field<uint64_t>(j, "id");
    o.label = text_field(j, "label");
    return o;
}

json buckets_to_json(const memory::BucketBytes & b) {
    return named_array_to_json(b, memory::bucket_name, [](size_t bytes) { return bytes; });
}

void buckets_from_json(const json & j, const char * key, memory::BucketBytes & out) {
    named_array_from_json(j, key, memory::bucket_name, as_int<size_t>, out);
}

json devices_to_json(const memory::DeviceBuckets & devices) {
    json out = json::object();
    for (const auto & [name, buckets] : devices) out[name] = {{"buckets", buckets_to_json(buckets)}};
    return out;
}

void devices_from_json(const json & j, memory::DeviceBuckets & out) {
    const json & devices = at(j, "devices");
    if (!devices.is_object()) throw std::invalid_argument("devices must be an object");
    for (const auto & [name, d] : devices.items()) buckets_from_json(d, "buckets", out[name]);
}

} // namespace

nlohmann::json request_to_json(const GenerateRequest & req, std::vector<std::string> & blobs) {
    ImageWriter images(blobs);
    json        j = {{"model", model_to_json(req.model)},
                     {"prompt", prompt_to_json(req.prompt, images)},
                     {"context", context_to_json(req.context)},
                     {"generate", generate_to_json(req.generate)},
                     {"keep_alive_ns", opt_to_json(req.keep_alive, [](KeepAlive k) { return int64_t(k.count()); })},
                     {"load_only", req.load_only},
                     {"embed", opt_to_json(req.embed, embed_to_json)}};
    j["images"] = images.table();
    return j;
}

GenerateRequest request_from_json(const nlohmann::json & j, const std::vector<std::string> & blobs) {
    return reading("request", [&] {
        const std::vector<ImagePtr> images = images_from_json(j, "images", blobs);
        GenerateRequest             req;
        req.model      = model_from_json(object_field(j, "model"));
        req.prompt     = prompt_from_json(object_field(j, "prompt"), images);
        req.context    = context_from_json(object_field(j, "context"));
        req.generate   = generate_from_json(object_field(j, "generate"));
        req.keep_alive = opt_field(j, "keep_alive_ns", [](const json & v, const char * name) {
            return KeepAlive(as_int<int64_t>(v, name));
        });
        req.load_only  = bool_field(j, "load_only");
        req.embed      = opt_field(j, "embed", embed_from_json);
        return req;
    });
}

nlohmann::json event_to_json(const scheduler::Event & e, std::vector<std::string> & blobs) {
    // The done part only where the runner fills it in (a done event): a text event goes out
    // for every token, and its done part would be a few hundred bytes of zeros each time. An
    // event of another kind reads back with a default DoneInfo, as it was made.
    json done = nullptr;
    if (e.kind == scheduler::Event::Kind::done) {
        done = {{"result", result_to_json(e.done.result)},
                {"load_ns", e.done.load_ns},
                {"total_ns", e.done.total_ns},
                {"embeddings", embeddings_to_json(e.done.embeddings, blobs)}};
    }
    return {{"kind", event_kind_name(e.kind)},
            {"text", text_to_json(e.text)},
            {"error", error_kind_name(e.error)},
            {"done", std::move(done)},
            {"logprobs", logprobs_to_json(e.logprobs)}};
}

scheduler::Event event_from_json(const nlohmann::json & j, const std::vector<std::string> & blobs) {
    return reading("event", [&] {
        scheduler::Event e;
        e.kind  = enum_field(j, "kind", k_event_kinds, event_kind_name);
        e.text  = text_field(j, "text");
        e.error = enum_field(j, "error", k_error_kinds, error_kind_name);
        if (e.kind == scheduler::Event::Kind::done) {
            const json & done = object_field(j, "done");
            e.done.result     = result_from_json(object_field(done, "result"));
            e.done.load_ns    = int_field<int64_t>(done, "load_ns");
            e.done.total_ns   = int_field<int64_t>(done, "total_ns");
            e.done.embeddings = embeddings_from_json(object_field(done, "embeddings"), blobs);
        }
        e.logprobs = list_field(j, "logprobs", logprob_from_json);
        return e;
    });
}

nlohmann::json loaded_to_json(const scheduler::LoadedInfo & info) {
    const auto expires_ns = [](std::chrono::system_clock::time_point t) {
        return int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    return {{"name", text_to_json(info.name)},
            {"digest", text_to_json(info.digest)},
            {"size_bytes", info.size_bytes},
            {"context_length", info.context_length},
            {"parallel", info.parallel},
            {"expires_at_ns", opt_to_json(info.expires_at, expires_ns)},
            {"family", text_to_json(info.family)},
            {"parameter_size", text_to_json(info.parameter_size)},
            {"quantization_level", text_to_json(info.quantization_level)},
            {"memory_owner", info.memory_owner},
            {"threads", info.threads},
            {"threads_batch", info.threads_batch},
            {"draft_threads", info.draft_threads},
            {"kv_cache_type", info.kv_cache_type},
            {"running", info.running},
            {"queued", info.queued},
            {"live", live_to_json(info.live)}};
}

scheduler::LoadedInfo loaded_from_json(const nlohmann::json & j) {
    return reading("loaded model", [&] {
        scheduler::LoadedInfo info;
        info.name           = text_field(j, "name");
        info.digest         = text_field(j, "digest");
        info.size_bytes     = int_field<uint64_t>(j, "size_bytes");
        info.context_length = int_field<uint32_t>(j, "context_length");
        info.parallel       = int_field<int>(j, "parallel");
        info.expires_at     = opt_field(j, "expires_at_ns", [](const json & v, const char * name) {
            const std::chrono::nanoseconds ns(as_int<int64_t>(v, name));
            return std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(ns));
        });
        info.family             = text_field(j, "family");
        info.parameter_size     = text_field(j, "parameter_size");
        info.quantization_level = text_field(j, "quantization_level");
        info.memory_owner       = int_field<uint64_t>(j, "memory_owner");
        info.threads            = int_field<int32_t>(j, "threads");
        info.threads_batch      = int_field<int32_t>(j, "threads_batch");
        info.draft_threads      = int_field<int32_t>(j, "draft_threads");
        info.kv_cache_type      = text_field(j, "kv_cache_type");
        info.running            = int_field<int>(j, "running");
        info.queued             = int_field<size_t>(j, "queued");
        info.live               = live_from_json(object_field(j, "live"));
        return info;
    });
}

nlohmann::json ledger_to_json(const memory::LedgerSnapshot & snap) {
    json models = json::array();
    for (const memory::ModelBytes & m : snap.models) {
        models.push_back({{"owner", owner_to_json(m.owner)}, {"buckets", buckets_to_json(m.buckets)}, {"total", m.total},
                          {"devices", devices_to_json(m.devices)}});
    }
    json reservations = json::array();
    for (const memory::ReservationInfo & r : snap.reservations) {
        reservations.push_back({{"owner", owner_to_json(r.owner)},
                                {"bucket", memory::bucket_name(r.bucket)},
                                {"bytes", r.bytes},
                                {"owner_open", r.owner_open},
                                {"device", r.device}});
    }
    const auto counters = [](const memory::OwnerCounters & c) { return json{{"created", c.created}, {"closed", c.closed}}; };
    return {{"buckets", buckets_to_json(snap.buckets)},
            {"total", snap.total},
            {"devices", devices_to_json(snap.devices)},
            {"models", std::move(models)},
            {"reservations", std::move(reservations)},
            {"owners", named_array_to_json(snap.owners, memory::owner_kind_name, counters)}};
}

memory::LedgerSnapshot ledger_from_json(const nlohmann::json & j) {
    return reading("ledger", [&] {
        memory::LedgerSnapshot snap;
        buckets_from_json(j, "buckets", snap.buckets);
        snap.total = int_field<size_t>(j, "total");
        devices_from_json(j, snap.devices);
        for (const json & m : array_field(j, "models")) {
            memory::ModelBytes & out = snap.models.emplace_back();
            out.owner                = owner_from_json(object_field(m, "owner"));
            buckets_from_json(m, "buckets", out.buckets);
            out.total = int_field<size_t>(m, "total");
            devices_from_json(m, out.devices);
        }
        for (const json & r : array_field(j, "reservations")) {
            memory::ReservationInfo & out = snap.reservations.emplace_back();
            out.owner                     = owner_from_json(object_field(r, "owner"));
            out.bucket                    = enum_field(r, "bucket", k_buckets, memory::bucket_name);
            out.bytes                     = int_field<size_t>(r, "bytes");
            out.owner_open                = bool_field(r, "owner_open");
            out.device                    = text_field(r, "device");
        }
        const auto counters = [](const json & c, const char *) {
            return memory::OwnerCounters{int_field<uint64_t>(c, "created"), int_field<uint64_t>(c, "closed")};
        };
        named_array_from_json(j, "owners", memory::owner_kind_name, counters, snap.owners);
        return snap;
    });
}

nlohmann::json cache_stats_to_json(const memory::PromptCacheStats & s) {
    return {{"budget_bytes", s.budget_bytes},
            {"bytes", s.bytes},
            {"entries", s.entries},
            {"tokens", s.tokens},
            {"hits", s.hits},
            {"misses", s.misses},
            {"tokens_reused", s.tokens_reused},
            {"evictions", s.evictions},
            {"stores", s.stores},
            {"rejected", s.rejected}};
}

memory::PromptCacheStats cache_stats_from_json(const nlohmann::json & j) {
    return reading("prompt cache stats", [&] {
        memory::PromptCacheStats s;
        s.budget_bytes  = int_field<size_t>(j, "budget_bytes");
        s.bytes         = int_field<size_t>(j, "bytes");
        s.entries       = int_field<size_t>(j, "entries");
        s.tokens        = int_field<size_t>(j, "tokens");
        s.hits          = int_field<uint64_t>(j, "hits");
        s.misses        = int_field<uint64_t>(j, "misses");
        s.tokens_reused = int_field<uint64_t>(j, "tokens_reused");
        s.evictions     = int_field<uint64_t>(j, "evictions");
        s.stores        = int_field<uint64_t>(j, "stores");
        s.rejected      = int_field<uint64_t>(j, "rejected");
        return s;
    });
}

} // namespace specd::process
