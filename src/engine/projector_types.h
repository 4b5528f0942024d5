#pragma once
// Which vision projector types specd serves. mtmd knows dozens; each places images in its
// own way (token counts, resize, positions, causal or not) and several abort the process on
// inputs they were not written for. Only a type with a fixture and the vision tests behind it
// is served (tools/testmodel writes one of each); any other is refused at create with a 400
// naming it, and at load for a model stored before.
#include "engine/gguf_info.h"

#include <filesystem>
#include <string>
#include <string_view>

namespace specd::engine {

// "gemma3, gemma4v, qwen2.5vl_merger, qwen2vl_merger": for messages.
std::string served_projector_types();

// Empty when a projector of this type (clip.projector_type) is served, else the refusal.
std::string projector_type_refusal(std::string_view type);

// The same for a projector GGUF (reads its header). Throws specd::Error(bad_request) when the
// file cannot be read.
std::string projector_file_refusal(const std::filesystem::path & mmproj);

// Empty when the text model `model` (its header) can take image embeddings, else why not:
// glm4 and glm4moe graphs without M-RoPE sections abort the process on them in the pinned
// llama.cpp.
std::string projector_text_refusal(const GgufInfo & model);

} // namespace specd::engine
