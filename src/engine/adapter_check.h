#pragma once
// Create-time check of a LoRA adapter GGUF against the model it is meant for, from the two
// headers only (no weights are read): the rules llama.cpp's llama_adapter_lora_init applies
// when the model loads, so a mismatch is a 400 at create rather than a failed load later.
#include <filesystem>
#include <string>

namespace specd::engine {

// Empty when `adapter_gguf` is a LoRA adapter (general.type "adapter", adapter.type "lora")
// for the architecture of `model_gguf` whose every lora_a/lora_b pair names a tensor of the
// model with matching shapes; otherwise what is wrong, for a user.
std::string lora_adapter_mismatch(const std::filesystem::path & model_gguf, const std::filesystem::path & adapter_gguf);

} // namespace specd::engine
