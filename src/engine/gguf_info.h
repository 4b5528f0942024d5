#pragma once
// Reads a GGUF file's header (metadata and tensor shapes) without loading its weights: what
// `create`, `/api/show` and `/api/tags` need to describe a model.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace specd::engine {

struct MetaEntry {
    using Scalar = std::variant<int64_t, double, bool, std::string>;
    struct Array {
        std::string         element_type;
        size_t              length = 0;
        std::vector<Scalar> values; // read_gguf_info(..., verbose) only; nested arrays stay empty
    };
    std::string                                                 key;
    std::variant<int64_t, double, bool, std::string, Array>     value;
};

struct GgufInfo {
    std::string            architecture;  // general.architecture
    std::string            name;          // general.name, may be empty
    uint64_t               n_params = 0;  // sum of tensor elements
    std::string            file_type;     // e.g. "F32", "Q4_K - Medium"
    int64_t                context_length = 0;
    std::string            chat_template;
    std::vector<MetaEntry> metadata;      // every key, arrays as type + length (+ values: verbose)
    struct Tensor {
        std::string           name;
        std::string           type;  // "F32", "Q4_K", ...
        std::vector<uint64_t> shape; // ggml's order, trailing 1s dropped
    };
    std::vector<Tensor>    tensors;       // verbose only
};

// Throws specd::Error(bad_request) naming the file (base name only) when it is missing,
// is not a GGUF file, or its header is corrupt.
// `verbose` (/api/show's): arrays with their values and the tensor list too.
GgufInfo read_gguf_info(const std::filesystem::path & path, bool verbose = false);

// Empty when two GGUF files carry the same tokenizer (model type, every token's text, BOS and
// EOS), else what differs. Reads headers only.
std::string gguf_vocab_mismatch(const std::filesystem::path & a, const std::filesystem::path & b);

// The integer value of metadata key `key`; nullopt when it is missing or not one integer (a
// per-layer array, as some architectures carry, is left to the caller's fallback).
std::optional<int64_t> gguf_int(const GgufInfo & info, std::string_view key);
// "135.3M", "8.0B": Ollama's parameter_size style.
std::string format_parameter_count(uint64_t n);

} // namespace specd::engine
