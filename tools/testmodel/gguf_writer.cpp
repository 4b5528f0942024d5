#include "gguf_writer.h"

#include "weight_rng.h"

#include <llama-cpp.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view tokenizer_prefix = "tokenizer.";

// The vocab file also carries its original architecture's keys (phi3.*, general.*), which
// would contradict ours; only the tokenizer travels.
gguf_context_ptr tokenizer_keys(const gguf_context * vocab) {
    gguf_context_ptr keys(gguf_init_empty());
    gguf_set_kv(keys.get(), vocab);
    for (int64_t i = gguf_get_n_kv(keys.get()) - 1; i >= 0; --i) {
        const std::string key = gguf_get_key(keys.get(), i);
        if (!key.starts_with(tokenizer_prefix)) {
            gguf_remove_key(keys.get(), key.c_str());
        }
    }
    return keys;
}

// The vocab's tokenizer, after the architecture's keys; `chat_template` replaces its template.
void add_tokenizer(gguf_context * out, const vocab_file & vocab, const std::optional<std::string> & chat_template) {
    gguf_context_ptr keys = tokenizer_keys(vocab.ctx.get());
    gguf_set_kv(out, keys.get());
    if (chat_template) {
        gguf_set_val_str(out, "tokenizer.chat_template", chat_template->c_str());
    }
}

void fill(ggml_tensor * t, const tensor_spec & spec, uint64_t seed) {
    auto * data = static_cast<float *>(t->data);
    const int64_t n = spec.n_elements();
    if (spec.init == WEIGHT_INIT_CUSTOM) {
        spec.custom(data);
        return;
    }
    if (spec.init != WEIGHT_INIT_UNIFORM) {
        const float value = spec.init == WEIGHT_INIT_ONES ? 1.0f : spec.init == WEIGHT_INIT_CONST ? float(spec.bound) : 0.0f;
        std::fill(data, data + n, value);
        return;
    }
    weight_rng rng(seed, spec.name);
    for (int64_t i = 0; i < n; ++i) {
        data[i] = rng.uniform(spec.bound);
        if (spec.row_prefix > 0 && i % spec.ne[0] >= spec.row_prefix) data[i] = 0.0f;
    }
    for (const int64_t row : spec.zero_rows) {
        if (row < 0 || (row + 1) * spec.ne[0] > n) {
            throw std::runtime_error("row " + std::to_string(row) + " is outside " + spec.name);
        }
        std::fill(data + row * spec.ne[0], data + (row + 1) * spec.ne[0], 0.0f);
    }
}

// A target's logit for a token whose output row is zero is 0, the middle of the random
// logits (std about 4): never among the 40 top_k keeps, about e^-13 of the best one's weight
// without top_k. So a fixture's answers end only at num_predict, a stop string or a grammar,
// as tests assume; with their random rows, sampled answers ended by themselves about once in
// 7500 tokens (a 4-token answer in CI read 3).
void silence_end_tokens(std::vector<tensor_spec> & specs, const vocab_file & vocab) {
    for (tensor_spec & spec : specs) {
        if (spec.name == "output.weight") spec.zero_rows = vocab.end_tokens();
    }
}

// Adds seeded random tensors for `specs` to `out` (which holds the metadata) and writes it
// through a temporary file and a rename, so an interrupted run never leaves a truncated file.
uint64_t write_with_weights(const std::string & path, gguf_context * out, const std::vector<tensor_spec> & specs,
                            uint64_t seed) {
    size_t mem_size = 0;
    for (const tensor_spec & spec : specs) {
        mem_size += ggml_tensor_overhead() + size_t(spec.n_elements()) * sizeof(float) + GGML_MEM_ALIGN;
    }
    ggml_init_params ggml_params = {/*mem_size =*/mem_size, /*mem_buffer =*/nullptr, /*no_alloc =*/false};
    ggml_context_ptr tensors(ggml_init(ggml_params));
    if (!tensors) {
        throw std::runtime_error("cannot allocate " + std::to_string(mem_size) + " bytes for the weights");
    }

    for (const tensor_spec & spec : specs) {
        ggml_tensor * t = ggml_new_tensor(tensors.get(), GGML_TYPE_F32, int(spec.ne.size()), spec.ne.data());
        ggml_set_name(t, spec.name.c_str());
        fill(t, spec, seed);
        gguf_add_tensor(out, t);
    }

    const std::string tmp = path + ".tmp";
    if (!gguf_write_to_file(out, tmp.c_str(), /*only_meta =*/false)) {
        std::filesystem::remove(tmp);
        throw std::runtime_error("cannot write " + path);
    }
    std::filesystem::rename(tmp, path);
    return std::filesystem::file_size(path);
}

} // namespace

vocab_file vocab_file_load(const std::string & path) {
    if (!std::filesystem::is_regular_file(path)) {
        throw std::runtime_error("vocab file not found: " + path);
    }
    gguf_init_params params = {/*no_alloc =*/true, /*ctx =*/nullptr};
    vocab_file vocab;
    vocab.ctx.reset(gguf_init_from_file(path.c_str(), params));
    if (!vocab.ctx) {
        throw std::runtime_error("not a readable GGUF file: " + path);
    }
    const int64_t tokens = gguf_find_key(vocab.ctx.get(), "tokenizer.ggml.tokens");
    if (tokens < 0 || gguf_get_kv_type(vocab.ctx.get(), tokens) != GGUF_TYPE_ARRAY) {
        throw std::runtime_error("no tokenizer.ggml.tokens in " + path + ": not a vocab GGUF");
    }
    vocab.n_vocab = uint32_t(gguf_get_arr_n(vocab.ctx.get(), tokens));
    vocab.has_chat_template = gguf_find_key(vocab.ctx.get(), "tokenizer.chat_template") >= 0;
    vocab.path              = path;
    return vocab;
}

// llama.cpp's own list (the vocab's eos, eot and eom ids and the end-of-turn texts it knows).
const std::vector<int64_t> & vocab_file::end_tokens() const {
    if (end_tokens_) return *end_tokens_;
    llama_model_params params = llama_model_default_params();
    params.vocab_only          = true;
    llama_model_ptr model(llama_model_load_from_file(path.c_str(), params));
    if (!model) throw std::runtime_error("libllama cannot read the vocab of " + path);
    const llama_vocab *  vocab = llama_model_get_vocab(model.get());
    std::vector<int64_t> out;
    for (llama_token t = 0; t < llama_vocab_n_tokens(vocab); ++t) {
        if (llama_vocab_is_eog(vocab, t)) out.push_back(t);
    }
    return end_tokens_.emplace(std::move(out));
}

uint64_t model_write(const std::string & path, const vocab_file & vocab, const model_write_params & params) {
    gguf_context_ptr out(gguf_init_empty());
    llama_set_hparams(out.get(), params.hparams, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, params.chat_template);
    std::vector<tensor_spec> specs = llama_tensor_specs(params.hparams, vocab.n_vocab);
    silence_end_tokens(specs, vocab);
    return write_with_weights(path, out.get(), specs, params.seed);
}

uint64_t gemma4_model_write(const std::string & path, const vocab_file & vocab, const gemma4_write_params & params) {
    gguf_context_ptr out(gguf_init_empty());
    gemma4_set_hparams(out.get(), params.hparams, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, params.chat_template);
    std::vector<tensor_spec> specs = gemma4_tensor_specs(params.hparams, vocab.n_vocab);
    silence_end_tokens(specs, vocab);
    return write_with_weights(path, out.get(), specs, params.seed);
}

uint64_t glm4moe_model_write(const std::string & path, const vocab_file & vocab, const glm4moe_write_params & params) {
    gguf_context_ptr out(gguf_init_empty());
    glm4moe_set_hparams(out.get(), params, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, std::nullopt);
    std::vector<tensor_spec> specs = glm4moe_tensor_specs(params, vocab.n_vocab);
    silence_end_tokens(specs, vocab);
    return write_with_weights(path, out.get(), specs, params.seed);
}

uint64_t gemma4_assistant_write(const std::string & path, const vocab_file & vocab, const gemma4_assistant_spec & spec) {
    gguf_context_ptr out(gguf_init_empty());
    gemma4_assistant_set_hparams(out.get(), spec, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, std::nullopt);
    return write_with_weights(path, out.get(), gemma4_assistant_tensor_specs(spec, vocab.n_vocab), spec.target_seed);
}

uint64_t eagle3_write(const std::string & path, const vocab_file & vocab, const eagle3_spec & spec) {
    gguf_context_ptr out(gguf_init_empty());
    eagle3_set_hparams(out.get(), spec, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, std::nullopt);
    return write_with_weights(path, out.get(), eagle3_tensor_specs(spec, vocab.n_vocab), spec.target_seed);
}

uint64_t dflash_write(const std::string & path, const vocab_file & vocab, const dflash_spec & spec) {
    gguf_context_ptr out(gguf_init_empty());
    dflash_set_hparams(out.get(), spec, vocab.n_vocab);
    add_tokenizer(out.get(), vocab, std::nullopt);
    return write_with_weights(path, out.get(), dflash_tensor_specs(spec, vocab.n_vocab), spec.target_seed);
}

uint64_t projector_write(const std::string & path, const projector_write_params & params) {
    gguf_context_ptr out(gguf_init_empty());
    clip_set_hparams(out.get(), params.hparams);
    return write_with_weights(path, out.get(), clip_tensor_specs(params.hparams), params.seed);
}

uint64_t lora_write(const std::string & path, const lora_write_params & params) {
    gguf_context_ptr out(gguf_init_empty());
    lora_set_keys(out.get(), params.spec);
    return write_with_weights(path, out.get(), lora_tensor_specs(params.spec), params.seed);
}
