#pragma once
// Where a model's layers go when there are devices besides the host's CPU (this machine's
// GPUs, RPC workers): Ollama's num_gpu says how many layers to offload; unset, llama.cpp's
// own fit (common/fit: common_fit_params) chooses as many as fit each device's free memory,
// leaving a margin, with the context the model will get. As Ollama, a model that fits whole on
// one device goes to that one alone (main_gpu's, else the one with the most free memory), and
// is spread over all of them otherwise. Layers that are not offloaded stay on the CPU. Without
// devices nothing changes: every layer on the CPU.
#include "engine/llama_handles.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace specd::engine {

struct PlacementRequest {
    std::vector<ggml_backend_dev_t> devices;  // empty: the CPU only
    std::optional<int32_t>          num_gpu;  // layers to offload; nullopt: as many as fit
    std::optional<int32_t>          main_gpu; // index into devices; nullopt: the fit chooses
    // Bytes other loaded models hold on each device (by ggml's name): under SPECD_GPU_MEMORY
    // the fit places this model in what they leave of the budget.
    std::map<std::string, uint64_t> held;
    // A draft model that will go to the same devices with all of its layers (llama-server's
    // default): the fit leaves room for it beside the target.
    std::optional<std::filesystem::path> draft;
    llama_context_params            context = llama_context_default_params(); // what the fit leaves room for
};

// The model parameters' placement fields and the buffers they point into; lives until the
// model is loaded.
class LayerPlacement {
  public:
    // Runs the fit when it is needed (loading the model's metadata a few times). Throws
    // specd::Error(bad_request) for a main_gpu past the last device.
    LayerPlacement(const std::filesystem::path & gguf, const PlacementRequest & request);
    LayerPlacement(const LayerPlacement &)             = delete;
    LayerPlacement & operator=(const LayerPlacement &) = delete;

    void apply(llama_model_params & mp) const;
    // The devices the layers go to (empty: the CPU only).
    std::vector<ggml_backend_dev_t> devices() const;

  private:
    // Runs the fit on `devices`; true when it found a placement.
    bool fit(const std::filesystem::path & gguf, const std::vector<ggml_backend_dev_t> & devices,
             const PlacementRequest & request);

    std::vector<ggml_backend_dev_t>               devices_; // null-terminated
    int32_t                                       n_gpu_layers_ = 0;
    std::vector<float>                            tensor_split_;
    std::vector<llama_model_tensor_buft_override> overrides_;
    bool                                          split_set_ = false;
};

// Per device, the memory the fit leaves free: SPECD_GPU_OVERHEAD (OLLAMA_GPU_OVERHEAD; a
// byte size, 0 allowed), else llama-server's default, 1 GiB. Throws std::invalid_argument
// for a value that is not a size (`specd serve` checks it at start).
inline constexpr size_t k_fit_margin_bytes = size_t(1) << 30;
size_t fit_margin_bytes();

// SPECD_GPU_MEMORY: the most memory the fit places on any one offload device (a byte size),
// below what the device reports free: for sharing a GPU with other programs, and for tests that
// force a partial offload. nullopt: unset. Throws std::invalid_argument like fit_margin_bytes.
std::optional<uint64_t> device_memory_cap();

// SPECD_TENSOR_SPLIT (llama-server's --tensor-split): fixed proportions of the offloaded
// layers per offload device, in their order ("3,1"); replaces the fit (num_gpu layers, all when
// unset). Empty: unset. Throws std::invalid_argument for a list that is not non-negative
// numbers with a positive sum.
std::vector<float> fixed_tensor_split();
std::vector<float> parse_tensor_split(const std::string & text);

} // namespace specd::engine
