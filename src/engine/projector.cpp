#include "engine/projector.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/projector_types.h"

#include <mtmd-helper.h>
#include <mtmd.h>

#include <chrono>

namespace specd::engine {

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// The pseudo-token of position `i` of an image: negative, and for two different images equal
// at a position by chance with probability 2^-31 (a whole image matching: never).
llama_token image_token(const std::string & identity, size_t i) {
    uint64_t h = 0; // the identity's first 64 bits (it is hex)
    for (size_t k = 0; k < 16 && k < identity.size(); ++k) {
        const char c = identity[k];
        h = (h << 4) | uint64_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    const uint64_t mixed = splitmix64(h ^ splitmix64(i + 1));
    return -static_cast<llama_token>(mixed >> 33) - 1; // in [-2^31, -1]
}

} // namespace

Projector::~Projector() = default;

const char * Projector::marker() { return mtmd_default_marker(); }

std::unique_ptr<Projector> Projector::load(const std::filesystem::path & mmproj, const Model & text_model,
                                           int32_t n_threads) {
    // Before mtmd sees the file: several types it knows abort on inputs they were not made for.
    if (const std::string why = projector_file_refusal(mmproj); !why.empty()) throw bad_request(why);
    if (const std::string why = projector_text_refusal(text_model.info()); !why.empty()) throw bad_request(why);
    ensure_backend();
    mtmd_context_params params = mtmd_context_params_default();
    params.use_gpu       = false;
    params.print_timings = false;
    params.n_threads     = std::max(1, n_threads);
    params.warmup        = false; // the first image pays for it instead of every model load
    LogCapture capture;
    std::unique_ptr<Projector> p(new Projector());
    p->ctx_.reset(mtmd_init_from_file(mmproj.c_str(), text_model.get(), params));
    if (!p->ctx_) {
        const std::string why = capture.first_error();
        throw bad_request("cannot load the vision projector" + (why.empty() ? std::string() : ": " + why));
    }
    if (!mtmd_support_vision(p->ctx_.get())) throw bad_request("the projector does not take images (audio only)");
    std::error_code ec;
    p->size_bytes_ = std::filesystem::file_size(mmproj, ec);
    p->vocab_      = text_model.vocab();
    return p;
}

MultimodalPrompt Projector::tokenize(const std::string & text, const std::vector<ImagePtr> & images,
                                     bool add_special) const {
    std::vector<mtmd_bitmap_ptr>     owned;
    std::vector<const mtmd_bitmap *> bitmaps;
    for (const ImagePtr & img : images) {
        owned.emplace_back(mtmd_bitmap_init(uint32_t(img->width), uint32_t(img->height), img->rgb().data()));
        if (!owned.back()) throw Error(ErrorKind::internal, "cannot hold an image for the projector");
        mtmd_bitmap_set_id(owned.back().get(), img->identity.c_str());
        bitmaps.push_back(owned.back().get());
    }
    mtmd_chunks_ptr chunks(mtmd_input_chunks_init());
    mtmd_input_text in{};
    in.text          = text.c_str();
    in.text_len      = text.size();
    in.add_special   = add_special;
    in.parse_special = true;
    const int32_t   rc = mtmd_tokenize(ctx_.get(), chunks.get(), &in, bitmaps.data(), bitmaps.size());
    if (rc == 1) throw bad_request("the prompt's image markers do not match its images");
    if (rc != 0) throw bad_request("the vision projector could not preprocess an image");

    MultimodalPrompt out;
    out.projector = this;
    size_t           image_index = 0;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks.get()); ++i) {
        const mtmd_input_chunk * c = mtmd_input_chunks_get(chunks.get(), i);
        if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t              n = 0;
            const llama_token * t = mtmd_input_chunk_get_tokens_text(c, &n);
            out.tokens.insert(out.tokens.end(), t, t + n);
            continue;
        }
        if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_IMAGE || image_index >= images.size()) {
            throw bad_request("the projector produced an input this server does not handle");
        }
        ImageSpan span;
        span.start    = out.tokens.size();
        span.n_tokens = mtmd_input_chunk_get_n_tokens(c);
        span.n_pos    = static_cast<size_t>(mtmd_input_chunk_get_n_pos(c));
        // Fewer positions than tokens is M-RoPE's layout (KvSequence::appended_image); more
        // would be a layout nothing here knows.
        if (span.n_tokens == 0 || span.n_pos == 0 || span.n_pos > span.n_tokens ||
            (span.n_pos != span.n_tokens && !mtmd_decode_use_mrope(ctx_.get()))) {
            throw bad_request("the projector places an image's tokens in a way this server does not handle");
        }
        span.chunk = mtmd_chunk_ptr(mtmd_input_chunk_copy(c));
        const std::string & id = images[image_index++]->identity;
        for (size_t k = 0; k < span.n_tokens; ++k) out.tokens.push_back(image_token(id, k));
        out.images.push_back(std::move(span));
    }
    // Templates that write the BOS text themselves would otherwise get a second BOS.
    const llama_token bos = llama_vocab_bos(vocab_);
    if (out.tokens.size() >= 2 && out.tokens[0] == bos && out.tokens[1] == bos) {
        out.tokens.erase(out.tokens.begin());
        for (ImageSpan & span : out.images) --span.start;
    }
    return out;
}

Projector::EvalTimes Projector::eval(const ImageSpan & image, llama_context * ctx, llama_seq_id seq, llama_pos pos,
                                     int32_t n_batch) const {
    const auto now = [] { return std::chrono::steady_clock::now(); };
    const auto ns  = [](auto d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); };
    EvalTimes  t;
    const auto t0 = now();
    if (mtmd_encode_chunk(ctx_.get(), image.chunk.get()) != 0) {
        throw Error(ErrorKind::internal, "the vision encoder failed on an image");
    }
    const auto t1   = now();
    llama_pos  next = 0;
    const int32_t rc = mtmd_helper_decode_image_chunk(ctx_.get(), ctx, image.chunk.get(), mtmd_get_output_embd(ctx_.get()),
                                                      pos, seq, n_batch, &next, nullptr, nullptr);
    if (rc != 0) throw Error(ErrorKind::internal, "the image embeddings could not be decoded (" + std::to_string(rc) + ")");
    // The sequence's mirror advances by the span's n_pos (KvSequence::appended_image).
    if (next != pos + static_cast<llama_pos>(image.n_pos)) {
        throw Error(ErrorKind::internal, "the image took other positions than its chunk says");
    }
    t.encode_ns = ns(t1 - t0);
    t.decode_ns = ns(now() - t1);
    return t;
}

std::vector<int32_t> text_tokens(const std::vector<llama_token> & tokens) {
    std::vector<int32_t> out;
    out.reserve(tokens.size());
    for (llama_token t : tokens) {
        if (!is_image_token(t)) out.push_back(t);
    }
    return out;
}

} // namespace specd::engine
