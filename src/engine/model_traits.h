#pragma once
// What a GGUF model is for, beyond generating text: /api/show's "embedding" and "insert"
// capabilities. Answered from the header and a vocabulary-only load (no weights), so it is
// cheap enough for /api/show, though still worth caching per blob by the caller.
#include <filesystem>

namespace specd::engine {

struct ModelTraits {
    // An embedding model: it declares a pooling type (what llama.cpp pools embeddings with)
    // or non-causal attention (BERT-style encoders).
    bool embedding = false;
    // Fill-in-the-middle: the vocabulary has FIM prefix and suffix tokens, which llama.cpp
    // finds when it loads the vocabulary (by metadata or by their well-known texts).
    bool fill_in_middle = false;
};

// Throws specd::Error(bad_request) when the file cannot be read as a GGUF model.
ModelTraits read_model_traits(const std::filesystem::path & gguf);

} // namespace specd::engine
