#pragma once
// A model's manifest (Docker distribution v2, as Ollama writes it): a config blob plus
// layers, each a media type, a digest and a size. The manifest is the only mutable thing in
// the store; blobs never change once written.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace specd::models {

namespace media_type {
inline constexpr std::string_view manifest  = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view config    = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view model     = "application/vnd.ollama.image.model";     // the GGUF
inline constexpr std::string_view params    = "application/vnd.ollama.image.params";    // JSON object
inline constexpr std::string_view system    = "application/vnd.ollama.image.system";    // text
inline constexpr std::string_view templ     = "application/vnd.ollama.image.template";  // text
inline constexpr std::string_view projector = "application/vnd.ollama.image.projector"; // mmproj GGUF
inline constexpr std::string_view license   = "application/vnd.ollama.image.license";   // text
inline constexpr std::string_view messages  = "application/vnd.ollama.image.messages";  // JSON array
inline constexpr std::string_view adapter   = "application/vnd.ollama.image.adapter";   // LoRA GGUF
inline constexpr std::string_view draft     = "application/vnd.ollama.image.draft";     // draft GGUF
// The type specd wrote before it used Ollama's: still read as a draft (Manifest::find), and a
// model created from one gets the new type.
inline constexpr std::string_view legacy_draft = "application/vnd.specd.image.draft";

// Whether a layer of type `layer` is one of kind `wanted`: the same type, or specd's old draft
// type for a draft.
inline bool is_kind(std::string_view layer, std::string_view wanted) {
    return layer == wanted || (wanted == draft && layer == legacy_draft);
}
} // namespace media_type

struct Layer {
    std::string media_type;
    std::string digest; // canonical "sha256:<lowercase hex>"
    uint64_t    size = 0;

    bool operator==(const Layer &) const = default;
};

struct Manifest {
    int                schema_version = 2;
    std::string        media_type     = std::string(media_type::manifest);
    Layer              config;
    std::vector<Layer> layers;

    // The first layer of that media type (media_type::is_kind), or nullptr.
    const Layer * find(std::string_view type) const;
    // Every layer of that media type (licenses repeat).
    std::vector<const Layer *> find_all(std::string_view type) const;
    // config + layers, the bytes the model occupies (shared blobs counted once per model).
    uint64_t total_size() const;

    bool operator==(const Manifest &) const = default;
};

// The config blob: what /api/show and /api/tags report as "details". Kept small; fields a
// caller does not know stay empty.
struct ModelConfig {
    std::string              model_format = "gguf";
    std::string              model_family;   // general.architecture, e.g. "llama"
    std::vector<std::string> model_families;
    std::string              model_type;     // parameter count, e.g. "8.0B"
    std::string              file_type;      // quantization, e.g. "Q4_K_M"
    std::vector<std::string> diff_ids;       // layer digests (Docker's rootfs)
    // Ollama's RENDERER, PARSER and REQUIRES (its built-in prompt renderer and output parser
    // for a family, the least Ollama version): kept so a store shared with Ollama round-trips;
    // specd renders with the model's own template and reads answers with llama.cpp's parsers.
    std::string              renderer;
    std::string              parser;
    std::string              requires_version;

    bool operator==(const ModelConfig &) const = default;
};

nlohmann::json to_json(const Manifest & manifest);
// Validates the structure and every digest; throws std::invalid_argument.
Manifest manifest_from_json(const nlohmann::json & j);
// Parses bytes read from disk or a registry; throws std::invalid_argument.
Manifest parse_manifest(std::string_view text);

nlohmann::json to_json(const ModelConfig & config);
// Lenient: missing or mistyped fields stay empty (configs come from other tools too).
ModelConfig config_from_json(const nlohmann::json & j);

} // namespace specd::models
