#pragma once
// Ollama model names: [host/][namespace/]model[:tag], defaults filled in. A name becomes a
// path under the store (manifests/<host>/<namespace>/<model>/<tag>), so parse() is the gate
// that keeps "../", absolute paths and odd characters out of the filesystem.
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace specd::models {

inline constexpr std::string_view k_default_host      = "registry.ollama.ai";
inline constexpr std::string_view k_default_namespace = "library";
inline constexpr std::string_view k_default_tag       = "latest";

inline constexpr size_t k_name_max_len      = 350; // the whole name as typed
inline constexpr size_t k_name_host_max_len = 350;
inline constexpr size_t k_name_part_max_len = 80;  // namespace, model, tag

struct ModelName {
    std::string host;
    std::string ns;
    std::string model;
    std::string tag;

    // The short form a user types: default host and namespace left out, tag always shown
    // ("tiny:latest", "me/tiny:v1", "example.com:5000/me/tiny:v1").
    std::string display() const;
    // All four parts, "host/namespace/model:tag".
    std::string full() const;
    // "host/namespace/model/tag", lowercased: names are case-insensitive, so the path is the
    // canonical key on case-sensitive filesystems too.
    std::string manifest_relpath() const;

    // Case-insensitive, like Ollama's lookups.
    bool operator==(const ModelName & other) const;
};

// Either a name with every part filled in, or the reason the text is not a valid name.
using ParsedModelName = std::variant<ModelName, std::string>;

ParsedModelName parse_model_name(std::string_view text);

// Convenience: the name, or std::nullopt (the reason is dropped).
std::optional<ModelName> parse(std::string_view text);

// Like parse_model_name(), but throws specd::Error(bad_request) with the reason.
ModelName parse_or_throw(std::string_view text);

} // namespace specd::models
