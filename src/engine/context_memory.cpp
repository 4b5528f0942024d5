#include "engine/context_memory.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace specd::engine {

ContextBytes parse_buffer_lines(const std::vector<std::string> & lines) {
    ContextBytes out;
    for (const std::string & line : lines) {
        const size_t at = line.find(" buffer size = ");
        if (at == std::string::npos) continue;
        const char * num = line.c_str() + at + std::strlen(" buffer size = ");
        char *       end = nullptr;
        const double mib = std::strtod(num, &end);
        if (end == num || !std::isfinite(mib) || mib < 0 || std::strncmp(end, " MiB", 4) != 0) continue;
        const auto   bytes = static_cast<size_t>(std::llround(mib * 1024.0 * 1024.0));
        const std::string kind = line.substr(0, at);
        // "CPU KV buffer", "CPU RS buffer" (recurrent state), "CPU compute buffer",
        // "CPU  output buffer"; the model's own buffers are the weights, counted elsewhere.
        if (kind.ends_with(" KV") || kind.ends_with(" RS") || kind.ends_with(" state")) out.kv += bytes;
        else if (kind.ends_with(" compute") || kind.ends_with(" output")) out.compute += bytes;
    }
    return out;
}

size_t estimate_kv_bytes(const Model & model, uint32_t n_ctx) {
    const llama_model * m       = model.get();
    const int32_t       n_head  = std::max(1, llama_model_n_head(m));
    const size_t        head_sz = static_cast<size_t>(llama_model_n_embd(m) / n_head);
    const size_t        per_cell_layer = 2 /*k,v*/ * static_cast<size_t>(llama_model_n_head_kv(m)) * head_sz * 2 /*f16*/;
    return static_cast<size_t>(n_ctx) * static_cast<size_t>(llama_model_n_layer(m)) * per_cell_layer;
}

ContextBytes context_bytes(const std::vector<std::string> & lines, const Model & model, uint32_t n_ctx) {
    ContextBytes b = parse_buffer_lines(lines);
    if (b.kv == 0) b.kv = estimate_kv_bytes(model, n_ctx);
    return b;
}

} // namespace specd::engine
