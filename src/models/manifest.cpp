#include "models/manifest.h"

#include "models/digest.h"

#include <stdexcept>

namespace specd::models {

namespace {

// Far above any real model (Ollama's have under ten); bounds work on a hostile manifest.
constexpr size_t k_max_layers = 256;

nlohmann::json layer_to_json(const Layer & layer) {
    return {{"mediaType", layer.media_type}, {"digest", layer.digest}, {"size", layer.size}};
}

Layer layer_from_json(const nlohmann::json & j, const char * what) {
    if (!j.is_object()) {
        throw std::invalid_argument(std::string("manifest ") + what + " is not an object");
    }
    Layer layer;
    const auto media = j.find("mediaType");
    if (media == j.end() || !media->is_string() || media->get<std::string>().empty()) {
        throw std::invalid_argument(std::string("manifest ") + what + " has no mediaType");
    }
    layer.media_type = media->get<std::string>();
    const auto digest = j.find("digest");
    if (digest == j.end() || !digest->is_string()) {
        throw std::invalid_argument(std::string("manifest ") + what + " has no digest");
    }
    auto normal = normalize_digest(digest->get<std::string>());
    if (!normal) {
        throw std::invalid_argument(std::string("manifest ") + what + " has an invalid digest");
    }
    layer.digest    = std::move(*normal);
    const auto size = j.find("size");
    if (size == j.end() || !size->is_number_integer() ||
        (!size->is_number_unsigned() && size->get<int64_t>() < 0)) {
        throw std::invalid_argument(std::string("manifest ") + what + " has an invalid size");
    }
    layer.size = size->get<uint64_t>();
    return layer;
}

std::string string_or_empty(const nlohmann::json & j, const char * key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> strings_or_empty(const nlohmann::json & j, const char * key) {
    std::vector<std::string> out;
    const auto               it = j.find(key);
    if (it != j.end() && it->is_array()) {
        for (const auto & s : *it) {
            if (s.is_string()) {
                out.push_back(s.get<std::string>());
            }
        }
    }
    return out;
}

} // namespace

const Layer * Manifest::find(std::string_view type) const {
    for (const auto & layer : layers) {
        if (media_type::is_kind(layer.media_type, type)) {
            return &layer;
        }
    }
    return nullptr;
}

std::vector<const Layer *> Manifest::find_all(std::string_view type) const {
    std::vector<const Layer *> out;
    for (const auto & layer : layers) {
        if (media_type::is_kind(layer.media_type, type)) {
            out.push_back(&layer);
        }
    }
    return out;
}

uint64_t Manifest::total_size() const {
    uint64_t total = config.size;
    for (const auto & layer : layers) {
        total += layer.size;
    }
    return total;
}

nlohmann::json to_json(const Manifest & m) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto & layer : m.layers) {
        layers.push_back(layer_to_json(layer));
    }
    return {
        {"schemaVersion", m.schema_version},
        {"mediaType", m.media_type},
        {"config", layer_to_json(m.config)},
        {"layers", layers},
    };
}

Manifest manifest_from_json(const nlohmann::json & j) {
    if (!j.is_object()) {
        throw std::invalid_argument("manifest is not a JSON object");
    }
    Manifest   m;
    const auto version = j.find("schemaVersion");
    if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != 2) {
        throw std::invalid_argument("manifest schemaVersion is not 2");
    }
    m.media_type = string_or_empty(j, "mediaType");
    if (m.media_type.empty()) {
        // Ollama writes it, but the OCI spec makes it optional.
        m.media_type = std::string(media_type::manifest);
    }
    const auto config = j.find("config");
    if (config == j.end()) {
        throw std::invalid_argument("manifest has no config");
    }
    m.config          = layer_from_json(*config, "config");
    const auto layers = j.find("layers");
    if (layers == j.end() || !layers->is_array()) {
        throw std::invalid_argument("manifest has no layers");
    }
    if (layers->size() > k_max_layers) {
        throw std::invalid_argument("manifest has too many layers");
    }
    for (const auto & layer : *layers) {
        m.layers.push_back(layer_from_json(layer, "layer"));
    }
    return m;
}

Manifest parse_manifest(std::string_view text) {
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
        throw std::invalid_argument("manifest is not valid JSON");
    }
    return manifest_from_json(j);
}

nlohmann::json to_json(const ModelConfig & c) {
    nlohmann::json j = {
        {"model_format", c.model_format},
        {"model_family", c.model_family},
        {"model_families", c.model_families},
        {"model_type", c.model_type},
        {"file_type", c.file_type},
        {"rootfs", {{"type", "layers"}, {"diff_ids", c.diff_ids}}},
    };
    // Ollama's config fields, only when set (configs without them stay byte-identical).
    if (!c.renderer.empty()) j["renderer"] = c.renderer;
    if (!c.parser.empty()) j["parser"] = c.parser;
    if (!c.requires_version.empty()) j["requires"] = c.requires_version;
    return j;
}

ModelConfig config_from_json(const nlohmann::json & j) {
    ModelConfig c;
    if (!j.is_object()) {
        return c;
    }
    c.model_format   = string_or_empty(j, "model_format");
    c.model_family   = string_or_empty(j, "model_family");
    c.model_families = strings_or_empty(j, "model_families");
    c.model_type     = string_or_empty(j, "model_type");
    c.file_type      = string_or_empty(j, "file_type");
    c.renderer         = string_or_empty(j, "renderer");
    c.parser           = string_or_empty(j, "parser");
    c.requires_version = string_or_empty(j, "requires");
    if (const auto rootfs = j.find("rootfs"); rootfs != j.end() && rootfs->is_object()) {
        c.diff_ids = strings_or_empty(*rootfs, "diff_ids");
    }
    return c;
}

} // namespace specd::models
