#pragma once
// What a client asked for, as plain data: filled in by api/, carried by the scheduler,
// turned into tokens by the engine.
#include "core/options.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace specd {

struct Message {
    std::string role; // system | user | assistant | tool
    std::string content;
};

struct PromptSpec {
    enum class Kind { generate, chat };
    Kind                 kind = Kind::generate;
    std::string          prompt;   // generate
    std::string          system;   // generate: overrides the model's SYSTEM
    std::string          suffix;   // generate: fill-in-the-middle
    bool                 raw = false;
    std::vector<Message> messages; // chat
    std::vector<int32_t> context;  // generate: tokens of an earlier answer to continue
};

// The files a stored model resolves to (see models/store.h).
struct ModelFiles {
    std::string           name;  // as shown to users, e.g. "tiny:latest"
    std::filesystem::path gguf;
    std::string           digest; // of the manifest: a changed model reloads
    std::string           system; // the Modelfile's SYSTEM
    std::optional<std::filesystem::path> draft; // the Modelfile's DRAFT: a speculation model
};

using KeepAlive = std::chrono::nanoseconds; // negative: forever

struct GenerateRequest {
    ModelFiles               model;
    PromptSpec               prompt;
    ContextOptions           context;
    GenerateOptions          generate;
    std::optional<KeepAlive> keep_alive;
    bool                     load_only = false; // empty prompt: load (or unload) and return
};

} // namespace specd
