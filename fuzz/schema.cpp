// JSON schema text -> GBNF (grammar::schema_to_grammar), the path a request's `format` takes.
// A rejection must be specd::Error(bad_request). A grammar it returns must load in llama.cpp's
// grammar sampler, as the engine loads it; that check needs a vocabulary: set
// SPECD_FUZZ_VOCAB to a vocab-only GGUF (scripts/fuzz.sh uses ggml-vocab-phi-3.gguf), else
// it is skipped.
#include "core/error.h"
#include "engine/backend.h"
#include "engine/llama_handles.h"
#include "grammar/json_schema.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace specd;

namespace {

// Loaded once and kept for the whole run; null when SPECD_FUZZ_VOCAB is unset.
const llama_vocab * fuzz_vocab() {
    static engine::model_ptr model = []() -> engine::model_ptr {
        const char * path = std::getenv("SPECD_FUZZ_VOCAB");
        if (!path || !*path) return nullptr;
        engine::ensure_backend();
        llama_model_params params = llama_model_default_params();
        params.vocab_only         = true;
        engine::model_ptr m(llama_model_load_from_file(path, params));
        if (!m) {
            std::fprintf(stderr, "fuzz-schema: cannot load the vocabulary %s\n", path);
            std::abort();
        }
        return m;
    }();
    return model ? llama_model_get_vocab(model.get()) : nullptr;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    fuzz_vocab();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string schema(reinterpret_cast<const char *>(data), size);
    std::string       gbnf;
    try {
        gbnf = grammar::schema_to_grammar(schema);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
        return 0;
    }
    if (const llama_vocab * vocab = fuzz_vocab()) {
        engine::sampler_ptr sampler(llama_sampler_init_grammar(vocab, gbnf.c_str(), "root"));
        if (!sampler) {
            // llama.cpp has logged why; the grammar is what to look at.
            std::fprintf(stderr, "fuzz-schema: llama.cpp rejects the grammar:\n%s\n", gbnf.c_str());
            __builtin_trap();
        }
    }
    return 0;
}
