#pragma once
// A vision projector (mmproj GGUF) attached to a loaded text model, through llama.cpp's mtmd:
// turns a prompt's text and images into one token sequence and evaluates its images.
//
// A prompt with images is a token sequence where every image position holds a pseudo-token:
// a negative id derived from the image's identity (a hash of its pixels) and the position in
// the image. Prefix comparisons (the live KV, the prompt cache's keys) then see "the same
// image at the same place" as equal tokens and anything else as different, without knowing
// about images. Pseudo-tokens are never sampled, drafted or sent to a model as token ids.
#include "core/request.h"
#include "engine/llama_handles.h"
#include "engine/model.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace specd::engine {

// Where an image sits in a prompt's token sequence. Its tokens take one KV cell each; the
// positions it advances are as many (gemma3, gemma4v) or fewer: M-RoPE models (Qwen-VL) place
// all of an image's cells at its first position, with its grid in the other RoPE sections,
// and the text after it continues max(grid width, grid height) positions later.
struct ImageSpan {
    size_t                                   start    = 0; // index of its first token
    size_t                                   n_tokens = 0; // tokens (= KV cells) it takes
    size_t                                   n_pos    = 0; // positions it advances
    std::shared_ptr<const mtmd_input_chunk>  chunk;        // mtmd's image chunk, to encode
};

class Projector;

struct MultimodalPrompt {
    std::vector<llama_token> tokens;              // text tokens and image pseudo-tokens, one per KV cell
    std::vector<ImageSpan>   images;              // in order of `start`
    const Projector *        projector = nullptr; // evaluates the images; outlives the prompt
    // The text's middle was never tokenized (engine/prompt_ends.h): `tokens` are its ends,
    // and the prompt is over the context.
    bool                     elided = false;
};

inline bool is_image_token(llama_token t) { return t < 0; }

class Projector {
  public:
    // Throws specd::Error(bad_request) when its type is not served (engine/projector_types),
    // mtmd cannot load the file for this text model (wrong width, not a projector) or the
    // projector takes no images (audio only).
    static std::unique_ptr<Projector> load(const std::filesystem::path & mmproj, const Model & text_model,
                                           int32_t n_threads);
    ~Projector();
    Projector(const Projector &)             = delete;
    Projector & operator=(const Projector &) = delete;

    // The text that stands for one image in a prompt handed to tokenize().
    static const char * marker();

    // `text` holds one marker per image, in order. Text parts are tokenized with special
    // tokens parsed (templated prompts); `add_special` adds the model's BOS.
    MultimodalPrompt tokenize(const std::string & text, const std::vector<ImagePtr> & images, bool add_special) const;

    // Encodes the image and writes its embeddings into `ctx`'s sequence `seq` from `pos`, in
    // one batch of up to `n_batch` tokens (an image that attends to itself non-causally must
    // fit one micro-batch: the caller sizes the context for it). Throws on failure.
    struct EvalTimes {
        int64_t encode_ns = 0;
        int64_t decode_ns = 0;
    };
    EvalTimes eval(const ImageSpan & image, llama_context * ctx, llama_seq_id seq, llama_pos pos, int32_t n_batch) const;

    uint64_t size_bytes() const { return size_bytes_; } // the projector file (its weights)

  private:
    Projector() = default;
    mtmd_ptr            ctx_;
    const llama_vocab * vocab_      = nullptr; // the text model's
    uint64_t            size_bytes_ = 0;
};

// Tokens of a prompt that can go back to a client as Ollama's `context`: image positions
// have no token id, so they are left out.
std::vector<int32_t> text_tokens(const std::vector<llama_token> & tokens);

} // namespace specd::engine
