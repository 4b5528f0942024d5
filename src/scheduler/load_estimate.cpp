#include "scheduler/load_estimate.h"

#include "core/error.h"
#include "engine/draft_kind.h"
#include "engine/gguf_info.h"
#include "engine/kv_cache_type.h"
#include "engine/session.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <unistd.h>

namespace specd::scheduler {

namespace {

// K and V bytes per token of context, at f16 (llama.cpp's default cache type).
uint64_t kv_f16_bytes_per_token(const engine::GgufInfo & info) {
    const std::string a       = info.architecture + ".";
    const int64_t     n_layer = engine::gguf_int(info, a + "block_count").value_or(0);
    const int64_t     n_embd  = engine::gguf_int(info, a + "embedding_length").value_or(0);
    const int64_t     n_head  = std::max<int64_t>(1, engine::gguf_int(info, a + "attention.head_count").value_or(1));
    const int64_t     n_kv    = engine::gguf_int(info, a + "attention.head_count_kv").value_or(n_head);
    const int64_t     k_len   = engine::gguf_int(info, a + "attention.key_length").value_or(n_embd / n_head);
    const int64_t     v_len   = engine::gguf_int(info, a + "attention.value_length").value_or(n_embd / n_head);
    return uint64_t(std::max<int64_t>(0, n_layer * n_kv * (k_len + v_len) * 2));
}

// The same in the server's cache type (SPECD_KV_CACHE_TYPE), as the session and the draft
// context allocate it; the embedder's context keeps f16.
uint64_t kv_bytes_per_token(const engine::GgufInfo & info) {
    const engine::KvCacheType kv = engine::kv_cache_type_for(info, engine::configured_kv_cache_type());
    return uint64_t(double(kv_f16_bytes_per_token(info)) * kv.bytes_vs_f16());
}

// Bytes per token of a decode's output: logits over the vocabulary and the hidden state, f32.
uint64_t out_bytes_per_token(const engine::GgufInfo & info) {
    const std::string a      = info.architecture + ".";
    int64_t           n_vocab = engine::gguf_int(info, a + "vocab_size").value_or(0);
    for (const auto & e : info.metadata) {
        if (e.key != "tokenizer.ggml.tokens") continue;
        if (const auto * arr = std::get_if<engine::MetaEntry::Array>(&e.value)) n_vocab = std::max<int64_t>(n_vocab, int64_t(arr->length));
    }
    const int64_t n_embd = engine::gguf_int(info, a + "embedding_length").value_or(0);
    return uint64_t(std::max<int64_t>(0, n_vocab + n_embd)) * 4;
}

uint64_t file_bytes(const std::filesystem::path & p) {
    std::error_code ec;
    const auto      n = std::filesystem::file_size(p, ec);
    return ec ? 0 : uint64_t(n);
}

} // namespace

LoadEstimate estimate_load(const ModelFiles & files, const ContextOptions & context) {
    const engine::GgufInfo info = engine::read_gguf_info(files.gguf);
    LoadEstimate           e;
    e.n_ctx         = effective_num_ctx(context.num_ctx, info.context_length);
    e.num_batch     = context.num_batch;
    e.weights       = file_bytes(files.gguf);
    e.kv_per_seq    = kv_bytes_per_token(info) * uint64_t(e.n_ctx);
    e.out_per_token = out_bytes_per_token(info);
    const uint64_t n_ctx = uint64_t(e.n_ctx);
    e.embedder = kv_f16_bytes_per_token(info) * n_ctx + n_ctx * std::max(e.out_per_token, 2 * n_ctx) + n_ctx * e.out_per_token;
    if (files.draft) {
        const engine::GgufInfo draft = engine::read_gguf_info(*files.draft);
        e.weights += file_bytes(*files.draft);
        // gemma4's assistant reads the target's cache and has none of its own.
        e.draft_kind = engine::draft_kind_of(draft.architecture);
        if (engine::has_own_cache(e.draft_kind)) {
            e.kv_per_seq += kv_bytes_per_token(draft) * uint64_t(e.n_ctx);
        }
        e.draft_out_per_token = out_bytes_per_token(draft);
    } else if (auto builtin = engine::builtin_draft_kind(info)) {
        // Its own MTP layer drafts, in a context of the same model whose cache libllama sizes
        // for all of the model's layers (most architectures' MTP contexts filter none).
        e.draft_kind          = *builtin;
        e.kv_per_seq         += kv_bytes_per_token(info) * uint64_t(e.n_ctx);
        e.draft_out_per_token = e.out_per_token;
    }
    if (files.projector) e.weights += file_bytes(*files.projector);
    return e;
}

uint64_t LoadEstimate::compute(int n_seq) const {
    const uint64_t seqs   = uint64_t(std::max(n_seq, 1));
    const uint64_t tokens = uint64_t(engine::batch_tokens(num_batch, n_ctx, n_seq));
    const uint64_t attn   = 2 * uint64_t(n_ctx) * seqs; // per KV cell: one context spans every sequence
    const uint64_t draft_tokens = uint64_t(engine::draft_ubatch(draft_kind, n_seq, int32_t(tokens)));
    const uint64_t draft        = draft_out_per_token == 0 ? 0 : draft_tokens * std::max(draft_out_per_token, attn);
    return tokens * std::max(out_per_token, attn) + draft;
}

int default_parallel(const LoadEstimate & e, uint64_t free_bytes) {
    if (e.kv_per_seq == 0) return 1; // a KV of unknown size is not multiplied
    const int64_t long_context = k_default_parallel_tokens / std::max<int64_t>(e.n_ctx, 1);
    for (int n = int(std::clamp<int64_t>(long_context, 1, k_default_parallel_max)); n > 1; --n) {
        if (e.bytes(n) <= free_bytes) return n;
    }
    return 1;
}

void check_context_size(const LoadEstimate & e, int n_seq) {
    const int64_t tokens = int64_t(e.n_ctx) * std::max(n_seq, 1);
    if (tokens <= k_max_context_tokens) return;
    throw bad_request("num_ctx " + std::to_string(e.n_ctx) + (n_seq > 1 ? " x " + std::to_string(n_seq) + " sequences" : "") +
                      " is more context than a model may hold: at most " + std::to_string(k_max_context_tokens) +
                      " tokens (its KV is allocated and cleared when it loads)");
}

uint64_t physical_memory_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long size  = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? uint64_t(pages) * uint64_t(size) : 0;
}

} // namespace specd::scheduler
