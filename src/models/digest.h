#pragma once
// Content digests ("sha256:<64 hex>") and a streaming SHA-256 (FIPS 180-4).
// A digest names a blob file, so it is validated before it is ever joined to a path: the
// missing check behind two of Ollama's path-traversal CVEs.
#include <array>
#include <cstddef>
#include <cstdint>
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

class Sha256 {
  public:
    Sha256();

    void update(const void * data, size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

    // Ends the stream; the object must be reset() before it is used again.
    std::array<uint8_t, 32> finish();
    // finish() as "sha256:<lowercase hex>".
    std::string finish_digest();

    void reset();

  private:
    void compress(const uint8_t * block);

    std::array<uint32_t, 8> state_;
    std::array<uint8_t, 64> buffer_;
    size_t                  buffer_len_ = 0;
    uint64_t                total_len_  = 0; // bytes
};

std::string to_hex(const uint8_t * data, size_t size);

// "sha256:<hex>" of a whole buffer.
std::string sha256_digest(std::string_view bytes);

} // namespace specd::models
