#pragma once
// A GGUF's general.file_type as Ollama names it ("Q4_K_M", "F16", "F32"), which is what
// clients show as a model's quantization level (/api/tags, /api/show, /api/ps, the CLI);
// llama.cpp's own descriptions ("Q4_K - Medium", "all F32") are for its logs.
#include <cstdint>
#include <string>

namespace specd::engine {

// "unknown" for a value no llama.cpp file type has (a newer or corrupt file).
std::string file_type_name(int64_t file_type);

// A file without general.file_type: named after its first tensor's type ("f32" -> "F32").
std::string tensor_type_name(const char * ggml_type_name);

} // namespace specd::engine
