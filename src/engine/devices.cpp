#include "engine/devices.h"

#include "engine/backend.h"

#include <ggml-backend.h>

#include <string>

namespace specd::engine {

namespace {

const char * kind_name(enum ggml_backend_dev_type type) {
    switch (type) {
        case GGML_BACKEND_DEVICE_TYPE_CPU:   return "CPU";
        case GGML_BACKEND_DEVICE_TYPE_GPU:   return "GPU";
        case GGML_BACKEND_DEVICE_TYPE_IGPU:  return "integrated GPU";
        case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accelerator";
        default:                             return "device";
    }
}

} // namespace

std::vector<DeviceInfo> local_devices() {
    ensure_backend();
    std::vector<DeviceInfo> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev   = ggml_backend_dev_get(i);
        size_t             free  = 0;
        size_t             total = 0;
        ggml_backend_dev_memory(dev, &free, &total);
        out.push_back({ggml_backend_dev_name(dev), ggml_backend_dev_description(dev), kind_name(ggml_backend_dev_type(dev)),
                       free, total});
    }
    return out;
}

std::vector<ggml_backend_dev_t> local_offload_devices() {
    ensure_backend();
    std::vector<ggml_backend_dev_t> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev  = ggml_backend_dev_get(i);
        const auto         type = ggml_backend_dev_type(dev);
        // RPC workers' devices are GPU-typed too; they come from SPECD_RPC, probed per load.
        const bool rpc = std::string(ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev))) == "RPC";
        if ((type == GGML_BACKEND_DEVICE_TYPE_GPU || type == GGML_BACKEND_DEVICE_TYPE_IGPU) && !rpc) out.push_back(dev);
    }
    return out;
}

} // namespace specd::engine
