#include "engine/context_memory.h"

#include "engine/kv_cache_type.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace specd::engine {

namespace {

struct BufferLine {
    std::string device; // the buffer's name: "CPU", "CPU_Mapped", "RPC0[127.0.0.1:50052]"
    std::string kind;   // what precedes " buffer size": "... KV", "... compute", "... model"
    size_t      bytes = 0;
};

// "<function>: <buffer name> <kind words> buffer size = <x> MiB"; false for other lines.
bool read_buffer_line(const std::string & line, BufferLine & out) {
    const size_t at = line.find(" buffer size = ");
    if (at == std::string::npos) return false;
    const char * num = line.c_str() + at + std::strlen(" buffer size = ");
    char *       end = nullptr;
    const double mib = std::strtod(num, &end);
    if (end == num || !std::isfinite(mib) || mib < 0 || std::strncmp(end, " MiB", 4) != 0) return false;
    out.bytes = static_cast<size_t>(std::llround(mib * 1024.0 * 1024.0));
    out.kind  = line.substr(0, at);
    // The buffer's name is the first word after the function's "name: " prefix.
    const size_t colon = out.kind.find(": ");
    size_t       from  = colon == std::string::npos ? 0 : colon + 2;
    while (from < out.kind.size() && out.kind[from] == ' ') ++from;
    const size_t space = out.kind.find(' ', from);
    out.device         = out.kind.substr(from, space == std::string::npos ? std::string::npos : space - from);
    return true;
}

// Host memory: the CPU's buffers, and pinned host buffers of an accelerator ("CUDA_Host").
bool on_host(const std::string & device) { return device.starts_with("CPU") || device.ends_with("_Host"); }

} // namespace

ContextBytes parse_buffer_lines(const std::vector<std::string> & lines) {
    ContextBytes out;
    BufferLine   b;
    for (const std::string & line : lines) {
        if (!read_buffer_line(line, b)) continue;
        // "CPU KV buffer", "CPU RS buffer" (recurrent state), "CPU compute buffer",
        // "CPU  output buffer"; the model's own buffers are the weights, counted elsewhere.
        size_t * total = nullptr;
        size_t * where = nullptr;
        if (b.kind.ends_with(" KV") || b.kind.ends_with(" RS") || b.kind.ends_with(" state")) {
            total = &out.kv;
            if (!on_host(b.device)) where = &out.offloaded[b.device].kv;
        } else if (b.kind.ends_with(" compute") || b.kind.ends_with(" output")) {
            total = &out.compute;
            if (!on_host(b.device)) where = &out.offloaded[b.device].compute;
        }
        if (total) *total += b.bytes;
        if (where) *where += b.bytes;
    }
    return out;
}

DeviceSplit parse_weight_lines(const std::vector<std::string> & lines) {
    DeviceSplit out;
    BufferLine  b;
    for (const std::string & line : lines) {
        if (read_buffer_line(line, b) && b.kind.ends_with(" model") && !on_host(b.device)) out[b.device].weights += b.bytes;
    }
    return out;
}

size_t estimate_kv_bytes(const Model & model, uint32_t n_ctx) {
    const llama_model * m       = model.get();
    const int32_t       n_head  = std::max(1, llama_model_n_head(m));
    const size_t        head_sz = static_cast<size_t>(llama_model_n_embd(m) / n_head);
    const size_t        per_cell_layer = 2 /*k,v*/ * static_cast<size_t>(llama_model_n_head_kv(m)) * head_sz * 2 /*f16*/;
    const double        f16_bytes = double(n_ctx) * double(llama_model_n_layer(m)) * double(per_cell_layer);
    return static_cast<size_t>(f16_bytes * kv_cache_type_for(model.info(), configured_kv_cache_type()).bytes_vs_f16());
}

ContextBytes context_bytes(const std::vector<std::string> & lines, const Model & model, uint32_t n_ctx) {
    ContextBytes b = parse_buffer_lines(lines);
    if (b.kv == 0) b.kv = estimate_kv_bytes(model, n_ctx);
    return b;
}

} // namespace specd::engine
