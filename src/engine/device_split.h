#pragma once
// Bytes a model holds on devices other than the host's CPU (RPC workers), by device: what
// the memory ledger shows per device.
#include <cstddef>
#include <map>
#include <string>

namespace specd::engine {

// What one device other than the host's CPU holds for a model.
struct DeviceBytes {
    size_t weights = 0;
    size_t kv      = 0;
    size_t compute = 0;
    bool   operator==(const DeviceBytes &) const = default;
};
// By the buffer name ggml gives the device ("RPC0[127.0.0.1:50052]"); host buffers ("CPU",
// "CPU_Mapped", "CPU_REPACK") are not in it.
using DeviceSplit = std::map<std::string, DeviceBytes>;

// Adds `more` into `into`, device by device.
void add_split(DeviceSplit & into, const DeviceSplit & more);

} // namespace specd::engine
