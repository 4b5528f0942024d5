#pragma once
// Content digests ("sha256:<64 hex>"), as blob names; the hashing is core/sha256.h.
// A digest names a blob file, so it is validated before it is ever joined to a path: the
// missing check behind two of Ollama's path-traversal CVEs.
#include "core/sha256.h"

#include <optional>
#include <string>
#include <string_view>

namespace specd::models {

// True for ^sha256[:-][0-9a-fA-F]{64}$ and nothing else.
bool is_valid_digest(std::string_view digest);

// The canonical form "sha256:<lowercase hex>", or nullopt when the digest is not valid.
std::optional<std::string> normalize_digest(std::string_view digest);

// The blob's file name, "sha256-<lowercase hex>", or nullopt when the digest is not valid.
std::optional<std::string> blob_filename(std::string_view digest);

} // namespace specd::models
