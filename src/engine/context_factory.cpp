#include "engine/context_factory.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/kv_cache_type.h"

#include <vector>

namespace specd::engine {

CreatedContext create_context(const Model & model, const llama_context_params & params, const std::string & what) {
    ensure_backend();
    LogCapture     capture;
    CreatedContext out;
    out.ctx.reset(llama_init_from_model(model.get(), params));
    if (!out.ctx) {
        const std::string why = capture.first_error();
        throw bad_request(what + (why.empty() ? "" : ": " + why));
    }
    if (!model.adapters().empty()) {
        // Every context of the model (session, embedder) computes with its adapters, or the
        // same model would answer differently depending on which context served it.
        std::vector<llama_adapter_lora *> adapters = model.adapters();
        std::vector<float>                scales(adapters.size(), 1.0f);
        if (llama_set_adapters_lora(out.ctx.get(), adapters.data(), adapters.size(), scales.data()) != 0) {
            throw bad_request(what + ": the model's LoRA adapters could not be applied");
        }
    }
    out.bytes = context_bytes(capture.buffer_lines(), model, params.n_ctx);
    return out;
}

bool abort_when_cancelled(void * data) {
    const auto * cancel = *static_cast<const std::atomic<bool> * const *>(data);
    return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

llama_context_params sequences_params(uint32_t n_ctx, int n_seq, int32_t n_batch) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx                = n_ctx * uint32_t(n_seq);
    cp.n_batch              = n_batch;
    cp.n_ubatch             = n_batch;
    cp.n_seq_max            = uint32_t(n_seq);
    cp.kv_unified           = true;
    apply_kv_cache_type(configured_kv_cache_type(), cp);
    return cp;
}

llama_context_params sequences_params(const Model & model, uint32_t n_ctx, int n_seq, int32_t n_batch) {
    llama_context_params cp = sequences_params(n_ctx, n_seq, n_batch);
    apply_kv_cache_type(kv_cache_type_for(model.info(), configured_kv_cache_type()), cp);
    return cp;
}

} // namespace specd::engine
