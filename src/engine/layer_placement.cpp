#include "engine/layer_placement.h"

#include "core/settings.h"

#include <fit.h>

#include <cstdio>
#include <mutex>

namespace specd::engine {

namespace {

// common_fit_params swaps llama.cpp's process-wide logger while it runs.
std::mutex g_fit_mutex;

} // namespace

size_t fit_margin_bytes() {
    const auto v = setting("GPU_OVERHEAD");
    if (!v) return k_fit_margin_bytes;
    return *v == "0" ? 0 : static_cast<size_t>(parse_byte_size(*v));
}

LayerPlacement::LayerPlacement(const std::filesystem::path & gguf, const PlacementRequest & request) {
    if (request.devices.empty()) return; // n_gpu_layers 0: the CPU only
    devices_ = request.devices;
    devices_.push_back(nullptr);
    // Ollama's num_gpu: -1 (or unset) is "as many as fit"; a count is taken as given.
    if (request.num_gpu && *request.num_gpu >= 0) {
        n_gpu_layers_ = *request.num_gpu;
        return;
    }
    llama_model_params mp = llama_model_default_params();
    mp.devices            = devices_.data();
    llama_context_params cp = request.context;
    tensor_split_.assign(llama_max_devices(), 0.0f);
    overrides_.assign(llama_max_tensor_buft_overrides(), {nullptr, nullptr});
    std::vector<size_t> margins(llama_max_devices(), fit_margin_bytes());
    std::lock_guard     lock(g_fit_mutex);
    const auto status = common_fit_params(gguf.c_str(), &mp, &cp, tensor_split_.data(), overrides_.data(), margins.data(),
                                          cp.n_ctx, nullptr, GGML_LOG_LEVEL_ERROR);
    if (status == COMMON_PARAMS_FIT_STATUS_SUCCESS) {
        n_gpu_layers_ = mp.n_gpu_layers;
        fitted_       = true;
    } else {
        n_gpu_layers_ = 0; // nothing fits: the CPU holds it all, as without the devices
    }
    if (n_gpu_layers_ == 0) {
        std::fprintf(stderr, "specd: %s: no layer fits the offload devices' free memory less SPECD_GPU_OVERHEAD; "
                             "its layers stay on the CPU\n",
                     gguf.filename().c_str());
    }
}

void LayerPlacement::apply(llama_model_params & mp) const {
    if (devices_.empty()) {
        mp.n_gpu_layers = 0;
        return;
    }
    mp.devices      = const_cast<ggml_backend_dev_t *>(devices_.data());
    mp.n_gpu_layers = n_gpu_layers_;
    if (fitted_) {
        mp.tensor_split          = tensor_split_.data();
        mp.tensor_buft_overrides = overrides_.data();
    }
}

} // namespace specd::engine
