#pragma once
// Where a model's layers go when there are devices besides the host's CPU (RPC workers
// today): Ollama's num_gpu says how many layers to offload; unset, llama.cpp's own fit
// (common/fit: common_fit_params) chooses as many as fit each device's free memory, leaving
// a margin, with the context the model will get. Layers that are not offloaded stay on the
// CPU. Without devices nothing changes: every layer on the CPU.
#include "engine/llama_handles.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace specd::engine {

struct PlacementRequest {
    std::vector<ggml_backend_dev_t> devices; // empty: the CPU only
    std::optional<int32_t>          num_gpu; // layers to offload; nullopt: as many as fit
    llama_context_params            context = llama_context_default_params(); // what the fit leaves room for
};

// The model parameters' placement fields and the buffers they point into; lives until the
// model is loaded.
class LayerPlacement {
  public:
    // Runs the fit when it is needed (loading the model's metadata a few times).
    LayerPlacement(const std::filesystem::path & gguf, const PlacementRequest & request);
    LayerPlacement(const LayerPlacement &)             = delete;
    LayerPlacement & operator=(const LayerPlacement &) = delete;

    void apply(llama_model_params & mp) const;

  private:
    std::vector<ggml_backend_dev_t>               devices_; // null-terminated
    int32_t                                       n_gpu_layers_ = 0;
    std::vector<float>                            tensor_split_;
    std::vector<llama_model_tensor_buft_override> overrides_;
    bool                                          fitted_ = false;
};

// Per device, the memory the fit leaves free: SPECD_GPU_OVERHEAD (OLLAMA_GPU_OVERHEAD; a
// byte size, 0 allowed), else llama-server's default, 1 GiB. Throws std::invalid_argument
// for a value that is not a size (`specd serve` checks it at start).
inline constexpr size_t k_fit_margin_bytes = size_t(1) << 30;
size_t fit_margin_bytes();

} // namespace specd::engine
