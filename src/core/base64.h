#pragma once
// Base64 (RFC 4648, standard alphabet), the form Ollama's `images` field carries images in.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

// The bytes `text` encodes, or nullopt when it is not base64. Accepted: the standard alphabet
// with the trailing '=' padding complete or left out, and CR/LF anywhere (Go's decoder behind
// Ollama skips line breaks too). Rejected: any other character (URL-safe '-' and '_', blanks,
// a "data:" prefix), padding that is not at the end or not the right amount, and a length
// that leaves a single character over (6 bits are not a byte).
std::optional<std::vector<uint8_t>> decode_base64(std::string_view text);

// What decode_base64 returns for valid text, counted without decoding, so that a caller can
// apply a byte limit before anything is allocated. For invalid text: an upper bound.
size_t base64_decoded_size(std::string_view text);

// Standard alphabet, padded.
std::string encode_base64(std::span<const uint8_t> bytes);

} // namespace specd
