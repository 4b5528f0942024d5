#pragma once
// Model parameters: the options a Modelfile's PARAMETER lines (and a model's params layer)
// set. Every field is optional: unset means "the server's default", so a model only carries
// what its author chose. Request options override these; these override the defaults.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace specd::models {

struct Parameters {
    std::optional<int32_t>   num_ctx;
    std::optional<int32_t>   num_predict;
    std::optional<int32_t>   num_keep;
    std::optional<int32_t>   num_batch;
    std::optional<int32_t>   num_thread;
    std::optional<int32_t>   num_gpu;  // layers to offload; -1 as many as fit (docs/gpu.md)
    std::optional<int32_t>   main_gpu; // the offload device a model that fits one goes to
    std::optional<int32_t>   draft_num_predict; // cap on the speculation depth
    std::optional<int32_t>   draft_depth;       // a fixed speculation depth instead of the controller
    std::optional<double>    temperature;
    std::optional<int32_t>   top_k;
    std::optional<double>    top_p;
    std::optional<double>    min_p;
    std::optional<double>    typical_p;
    std::optional<double>    repeat_penalty;
    std::optional<int32_t>   repeat_last_n;
    std::optional<double>    presence_penalty;
    std::optional<double>    frequency_penalty;
    std::optional<int64_t>   seed;
    std::optional<int32_t>   mirostat;
    std::optional<double>    mirostat_tau;
    std::optional<double>    mirostat_eta;
    std::vector<std::string> stop; // accumulates: each `stop` adds one string

    // Sets one parameter from its Modelfile text. Returns the reason on failure: an unknown
    // name (named in the message) or a value of the wrong type or range.
    std::optional<std::string> set(std::string_view name, std::string_view value);

    // Sets one parameter from a JSON value (a params layer or request options). Numbers must
    // be numbers; stop takes a string or an array of strings and replaces the list.
    std::optional<std::string> set_json(std::string_view name, const nlohmann::json & value);

    // Fields set in `over` win; a non-empty stop list in `over` replaces this one.
    void merge_from(const Parameters & over);

    bool empty() const;
    bool operator==(const Parameters &) const = default;
};

// True for the names set() and set_json() accept.
bool is_known_parameter(std::string_view name);

// The params layer: an object with only the set fields, stop as an array.
nlohmann::json to_json(const Parameters & params);

// Parses a params layer; unknown keys and bad values are errors. Throws std::invalid_argument.
Parameters parameters_from_json(const nlohmann::json & j);

// What Ollama's /api/show puts in "parameters": one "name<padded to 30> value" line per set
// field and stop entry, strings in double quotes. (A Modelfile is written by format_modelfile.)
std::string to_show_text(const Parameters & params);

} // namespace specd::models
