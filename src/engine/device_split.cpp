#include "engine/device_split.h"

namespace specd::engine {

void add_split(DeviceSplit & into, const DeviceSplit & more) {
    for (const auto & [name, b] : more) {
        DeviceBytes & d = into[name];
        d.weights += b.weights;
        d.kv += b.kv;
        d.compute += b.compute;
    }
}

} // namespace specd::engine
