#include "engine/projector_types.h"

#include "engine/gguf_info.h"

#include <array>

namespace specd::engine {

namespace {

// Each with its fixture: gemma3 (vision-mmproj.gguf), gemma4v (gemma4-mmproj.gguf),
// qwen2.5vl_merger (qwen-vl-mmproj.gguf) and qwen2vl_merger (qwen2-vl-mmproj.gguf), both with
// M-RoPE positions.
constexpr std::array<std::string_view, 4> k_served = {"gemma3", "gemma4v", "qwen2.5vl_merger", "qwen2vl_merger"};

} // namespace

std::string served_projector_types() {
    std::string out;
    for (const std::string_view t : k_served) {
        if (!out.empty()) out += ", ";
        out += t;
    }
    return out;
}

std::string projector_type_refusal(std::string_view type) {
    for (const std::string_view t : k_served) {
        if (t == type) return {};
    }
    const std::string named = type.empty() ? std::string("a projector without clip.projector_type")
                                           : "projector type '" + std::string(type) + "'";
    return named + " is not served (served: " + served_projector_types() + ")";
}

std::string projector_file_refusal(const std::filesystem::path & mmproj) {
    const GgufInfo info = read_gguf_info(mmproj);
    for (const MetaEntry & e : info.metadata) {
        if (e.key != "clip.projector_type") continue;
        const auto * type = std::get_if<std::string>(&e.value);
        return projector_type_refusal(type ? *type : std::string_view());
    }
    return projector_type_refusal({});
}

std::string projector_text_refusal(const GgufInfo & model) {
    const std::string & a = model.architecture;
    if (a != "glm4" && a != "glm4moe") return {};
    for (const MetaEntry & e : model.metadata) {
        if (e.key == a + ".rope.dimension_sections") return {};
    }
    return "a " + a + " model without M-RoPE sections cannot take images (llama.cpp's graph for it stops the process on them)";
}

} // namespace specd::engine
