#pragma once
// A loaded model: weights, vocabulary and the metadata read from its GGUF header.
#include "engine/device_split.h"
#include "engine/cpu_threads.h"
#include "engine/gguf_info.h"
#include "engine/layer_placement.h"
#include "engine/llama_handles.h"
#include "engine/vocab_index.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::engine {

class TextCutter;

// Whether a model's weights are mapped from their file rather than read into memory, for a
// request that may or may not say (option use_mmap). Ollama's rule: weights the CPU computes
// with are read into memory, because the CPU decodes faster from them (docs/engine.md has
// the numbers). Layers offloaded to another device (an RPC worker) are copied there either way.
bool maps_weights(std::optional<bool> requested);

struct ModelLoadOptions {
    bool use_mmap = false; // maps_weights(std::nullopt)
    // LoRA adapter GGUFs (the manifest's adapter layers), applied at scale 1 to every context
    // created for this model (context_factory).
    std::vector<std::filesystem::path> adapters;
    // The tokenizer alone (llama.cpp's vocab-only GGUFs): tokenize, but no context.
    bool vocab_only = false;
    // Its MTP layer too (llama.cpp skips nextn weights unless asked), for a model that drafts
    // with it (draft_kind's builtin_draft_kind).
    bool load_mtp = false;
    // Devices besides the CPU its layers may go to (engine/layer_placement.h); none by default.
    PlacementRequest placement;
};

class Model {
  public:
    // Throws specd::Error(bad_request) with a reason a user can act on: missing file, not a
    // GGUF file, unsupported architecture, too large for the memory available.
    static std::shared_ptr<Model> load(const std::filesystem::path & path, const ModelLoadOptions & opts);

    llama_model *       get() const { return model_.get(); }
    const llama_vocab * vocab() const { return vocab_; }
    const GgufInfo &    info() const { return info_; }
    int32_t             n_ctx_train() const { return llama_model_n_ctx_train(model_.get()); }
    uint64_t            size_bytes() const { return llama_model_size(model_.get()); }
    const ModelLoadOptions & load_options() const { return opts_; }
    // Its weights on devices other than the host's CPU (empty when every layer is there).
    const DeviceSplit & offloaded() const { return offloaded_; }
    // The devices besides the CPU its layers went to (engine/layer_placement).
    const std::vector<ggml_backend_dev_t> & devices() const { return devices_; }
    // The loaded LoRA adapters, in load_options().adapters order; empty for most models.
    const std::vector<llama_adapter_lora *> & adapters() const { return adapter_views_; }

    // `parse_special`: text like "<|user|>" becomes the control token (templated prompts),
    // not literal characters (raw user text inside a template is still tokenized with it,
    // as llama.cpp and Ollama do).
    std::vector<llama_token> tokenize(std::string_view text, bool add_special, bool parse_special) const;
    // The bytes of one token; may be part of a UTF-8 sequence. Control tokens render empty.
    std::string token_piece(llama_token token) const;
    bool        is_eog(llama_token token) const { return llama_vocab_is_eog(vocab_, token); }
    // What grammar constraints need to know about the vocabulary; built on first use
    // (milliseconds to tens of milliseconds), then shared by every request.
    const VocabIndex & vocab_index() const;
    // Its bytes once built, 0 before.
    size_t vocab_index_bytes() const { return vocab_index_bytes_.load(std::memory_order_acquire); }
    // Where a long prompt can be cut to tokenize only its ends (engine/text_cutter.h); built
    // on first use (a pass over the vocabulary).
    const TextCutter & text_cutter() const;

    ~Model();

    // The thread counts measured for this model on this machine (cpu_threads), kept so that
    // a new session on it does not time them again; nullopt until measured.
    std::optional<ThreadChoice> measured_threads() const;
    void                        set_measured_threads(const ThreadChoice & choice);

  private:
    Model() = default;

    model_ptr           model_;
    // After model_: adapters are freed before the model they belong to.
    std::vector<adapter_lora_ptr>     adapters_;
    std::vector<llama_adapter_lora *> adapter_views_;
    const llama_vocab * vocab_ = nullptr;
    GgufInfo            info_;
    ModelLoadOptions    opts_;
    DeviceSplit         offloaded_;
    std::vector<ggml_backend_dev_t> devices_;
    mutable std::once_flag                               vocab_index_once_;
    mutable std::unique_ptr<const VocabIndex>   vocab_index_;
    mutable std::atomic<size_t>                          vocab_index_bytes_{0};
    mutable std::once_flag                               text_cutter_once_;
    mutable std::unique_ptr<const TextCutter>            text_cutter_;
    mutable std::mutex                                   threads_mu_;
    std::optional<ThreadChoice>                          measured_threads_;
};

// Bytes of memory available to new allocations (MemAvailable), or 0 when unknown.
uint64_t available_memory_bytes();

} // namespace specd::engine
