#include "engine/draft_context.h"

#include "core/error.h"
#include "engine/context_factory.h"

#include <algorithm>
#include <cstring>

namespace specd::engine {

std::string vocab_mismatch(const Model & target, const Model & draft) {
    const llama_vocab * a = target.vocab();
    const llama_vocab * b = draft.vocab();
    if (llama_vocab_type(a) != llama_vocab_type(b)) return "the draft's tokenizer type differs from the model's";
    const int32_t n = llama_vocab_n_tokens(a);
    if (n != llama_vocab_n_tokens(b)) {
        return "the draft's vocabulary has " + std::to_string(llama_vocab_n_tokens(b)) + " tokens, the model's " +
               std::to_string(n);
    }
    if (llama_vocab_bos(a) != llama_vocab_bos(b) || llama_vocab_eos(a) != llama_vocab_eos(b)) {
        return "the draft's special tokens differ from the model's";
    }
    for (int32_t t = 0; t < n; ++t) {
        if (std::strcmp(llama_vocab_get_text(a, t), llama_vocab_get_text(b, t)) != 0) {
            return "the draft's token " + std::to_string(t) + " differs from the model's";
        }
    }
    return "";
}

DraftContext::DraftContext(std::shared_ptr<Model> draft, const Model & target, uint32_t n_ctx, int n_seq,
                           int32_t n_batch) :
    model_(std::move(draft)), batch_(std::max(1, n_batch), 1) {
    if (auto why = vocab_mismatch(target, *model_); !why.empty()) {
        throw bad_request("draft model cannot be used: " + why);
    }
    // Like the target's: one KV for every sequence, each held to n_ctx tokens by its owner.
    llama_context_params cp = sequences_params(*model_, n_ctx, std::max(1, n_seq), batch_.capacity());
    cp.n_threads = cp.n_threads_batch = 1; // until use_threads(): the session measures the draft's
    CreatedContext created = create_context(*model_, cp, "cannot create the draft model's context");
    ctx_                   = std::move(created.ctx);
    memory_                = created.bytes;
    const llama_token nl   = llama_vocab_nl(model_->vocab());
    filler_                = nl != LLAMA_TOKEN_NULL ? nl : 0;
}

void DraftContext::use_threads(ThreadPools & pools, const ThreadChoice & choice) {
    pools.attach(ctx_.get(), choice.n_threads, choice.n_threads_batch);
}

bool DraftContext::decode() {
    ++decodes_;
    return llama_decode(ctx_.get(), batch_.get()) == 0;
}

} // namespace specd::engine
