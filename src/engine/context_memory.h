#pragma once
// What a llama context allocates besides the weights: its KV cache and its compute buffers.
// llama.cpp's API has no call for this; it logs every buffer it allocates ("CPU KV buffer
// size = 12.00 MiB"), so the sizes are read from those lines, captured while the context is
// created. Where a line is missing (a future llama.cpp may word it differently) the KV size
// is computed from the model's shape instead, so the ledger never shows 0 for a live cache.
#include "engine/device_split.h"
#include "engine/model.h"

#include <cstddef>
#include <string>
#include <vector>

namespace specd::engine {

struct ContextBytes {
    size_t      kv      = 0; // KV cache (and recurrent state) buffers, on every device
    size_t      compute = 0; // compute and output buffers, on every device
    DeviceSplit offloaded;   // the part of both on devices other than the host (no weights)
};

// Sums the sizes in llama.cpp's "... buffer size = <x> MiB" lines by kind.
ContextBytes parse_buffer_lines(const std::vector<std::string> & lines);

// The model's weights on devices other than the host, from its "<buffer> model buffer size"
// lines (logged while it loads).
DeviceSplit parse_weight_lines(const std::vector<std::string> & lines);

// A KV cache of `n_ctx` cells of the server's cache type: per layer, keys and values of every
// KV head.
size_t estimate_kv_bytes(const Model & model, uint32_t n_ctx);

// The context's buffers as logged while it was created, the KV estimated where not logged.
ContextBytes context_bytes(const std::vector<std::string> & lines, const Model & model, uint32_t n_ctx);

} // namespace specd::engine
