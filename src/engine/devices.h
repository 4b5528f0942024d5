#pragma once
// The compute devices ggml finds in this process (the CPU, and GPUs in a GPU build), as
// `specd serve` names them when it starts, the way Ollama logs its "inference compute".
#include <ggml-backend.h>

#include <cstdint>
#include <string>
#include <vector>

namespace specd::engine {

struct DeviceInfo {
    std::string name;        // ggml's: "CPU", "Vulkan0", "CUDA0"
    std::string description; // e.g. the CPU's or GPU's model name
    std::string kind;        // "CPU", "GPU", "integrated GPU", "accelerator"
    uint64_t    free_bytes  = 0;
    uint64_t    total_bytes = 0;
};

std::vector<DeviceInfo> local_devices();

// This machine's devices that layers can be offloaded to (GPUs, integrated GPUs), in ggml's
// order; empty in a CPU build.
std::vector<ggml_backend_dev_t> local_offload_devices();

} // namespace specd::engine
