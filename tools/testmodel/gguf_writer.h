#pragma once

#include "clip_layout.h"
#include "dflash_layout.h"
#include "eagle3_layout.h"
#include "gemma4_assistant_layout.h"
#include "gemma4_layout.h"
#include "glm4moe_layout.h"
#include "llama_layout.h"
#include "lora_layout.h"

#include <ggml-cpp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// The tokenizer half of a model: a vocab-only GGUF from llama.cpp's models/ folder.
struct vocab_file {
    gguf_context_ptr ctx; // metadata only, no tensor data
    std::string      path;
    uint32_t         n_vocab = 0;
    bool             has_chat_template = false;

    // What llama.cpp ends a generation on (llama_vocab_is_eog), read on first use: a vocab-only
    // load through libllama, which took 1.5 s for gemma-4's 262k tokens (53 ms for phi-3's),
    // and only the models that answer need it, not the heads.
    const std::vector<int64_t> & end_tokens() const;

  private:
    mutable std::optional<std::vector<int64_t>> end_tokens_;
};

// Throws std::runtime_error when the file is missing or has no tokenizer.
vocab_file vocab_file_load(const std::string & path);

struct model_write_params {
    llama_hparams_spec         hparams;
    uint64_t                   seed = 1;
    std::optional<std::string> chat_template; // replaces the vocab's template when set
};

// Writes a complete llama-architecture GGUF: the vocab's tokenizer.* keys, the llama.*
// hyperparameters and seeded random F32 weights. Goes through a temporary file and a rename,
// so an interrupted run never leaves a truncated model behind. Returns the file size.
uint64_t model_write(const std::string & path, const vocab_file & vocab, const model_write_params & params);

struct gemma4_write_params {
    gemma4_hparams_spec        hparams;
    uint64_t                   seed = 1;
    std::optional<std::string> chat_template;
};

// The same for a gemma4-architecture model.
uint64_t gemma4_model_write(const std::string & path, const vocab_file & vocab, const gemma4_write_params & params);

// A glm4moe model with one MTP layer (glm4moe_layout.h).
uint64_t glm4moe_model_write(const std::string & path, const vocab_file & vocab, const glm4moe_write_params & params);

// A gemma4 assistant (an MTP head) for the gemma4 target that `spec.target` and
// `spec.target_seed` describe; the vocabulary must be the target's.
uint64_t gemma4_assistant_write(const std::string & path, const vocab_file & vocab, const gemma4_assistant_spec & spec);

// An EAGLE3 head for the llama target that `spec.target` and `spec.target_seed` describe; the
// vocabulary must be the target's.
uint64_t eagle3_write(const std::string & path, const vocab_file & vocab, const eagle3_spec & spec);

// A DFlash head for the llama target that `spec.target` and `spec.target_seed` describe (its
// output reading spec.n_content() dimensions); the vocabulary must be the target's.
uint64_t dflash_write(const std::string & path, const vocab_file & vocab, const dflash_spec & spec);

struct projector_write_params {
    clip_hparams_spec hparams;
    uint64_t          seed = 1;
};

// Writes a complete vision projector (mmproj) GGUF: the clip.* keys and seeded random F32
// weights, the same way as model_write. Returns the file size.
uint64_t projector_write(const std::string & path, const projector_write_params & params);

struct lora_write_params {
    lora_spec spec;
    uint64_t  seed = 1;
};

// Writes a LoRA adapter GGUF (no tokenizer: adapters carry none) the same way as
// model_write. Returns the file size.
uint64_t lora_write(const std::string & path, const lora_write_params & params);
