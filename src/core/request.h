#pragma once
// What a client asked for, as plain data: filled in by api/, carried by the scheduler,
// turned into tokens by the engine.
#include "core/image.h"
#include "core/options.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace specd {

// A function the model called: `arguments` is the text of one JSON object.
struct ToolCall {
    std::string name;
    std::string arguments;
    std::string id = {}; // the client's, in a conversation; empty: one is made up on the way out
};

// A function the model may call: `parameters` is the text of its JSON schema.
struct Tool {
    std::string name;
    std::string description;
    std::string parameters;
};

struct Message {
    std::string           role; // system | user | assistant | tool
    std::string           content;
    std::vector<ImagePtr> images     = {}; // in order; placed before the content in the prompt
    std::string           thinking   = {}; // assistant: its earlier reasoning
    std::vector<ToolCall> tool_calls = {}; // assistant: the calls it made
    std::string           tool_name  = {}; // tool: the function whose result this is
    std::string           tool_call_id = {}; // tool: the call (ToolCall::id) it answers
};

// `think`: whether the model reasons before it answers, and how hard ("low" | "medium" |
// "high"; empty: the template's default) for templates that take an effort.
struct ThinkSetting {
    bool        enabled = false;
    std::string effort;
};

struct PromptInput {
    enum class Kind { generate, chat };
    Kind                 kind = Kind::generate;
    std::string          prompt;   // generate
    std::string          system;   // generate: overrides the model's SYSTEM
    std::string          suffix;   // generate: fill-in-the-middle
    bool                 raw = false;
    std::vector<Message> messages; // chat
    std::vector<int32_t> context;  // generate: tokens of an earlier answer to continue
    std::vector<ImagePtr> images;  // generate: placed before the prompt text, in order
    std::optional<std::string> template_text; // the request's `template` (Ollama Go syntax): wins over the model's
    std::vector<Tool>          tools;  // chat: functions the template offers the model
    // OpenAI's tool_choice "required" (some call) or a named function (that one): the answer
    // is held to the template's tool-call syntax by a grammar. False: the model's choice.
    bool                       tool_required = false;
    std::string                tool_forced; // a function's name: that call, and only it
    std::optional<ThinkSetting> think; // unset: the template renders without thinking (as before `think` existed)

    // Every image of the request (generate's, then each message's in order).
    std::vector<ImagePtr> all_images() const {
        std::vector<ImagePtr> out = images;
        for (const Message & m : messages) out.insert(out.end(), m.images.begin(), m.images.end());
        return out;
    }
};

// The files a stored model resolves to (see models/store.h).
struct ModelFiles {
    std::string           name;  // as shown to users, e.g. "tiny:latest"
    std::filesystem::path gguf;
    std::string           digest; // of the manifest: a changed model reloads
    std::string           system; // the Modelfile's SYSTEM
    std::optional<std::filesystem::path> draft; // the Modelfile's DRAFT: a speculation model
    std::optional<std::filesystem::path> projector; // a second FROM: the vision projector (mmproj)
    std::optional<std::string>           template_text; // the Modelfile's TEMPLATE (Ollama Go syntax)
    std::vector<std::filesystem::path>   adapters; // the Modelfile's ADAPTERs: LoRA GGUFs, in order
};

using KeepAlive = std::chrono::nanoseconds; // negative: forever

// An embedding request (/api/embed, /api/embeddings, /v1/embeddings): one vector per input.
struct EmbedInput {
    std::vector<std::string> inputs;
    bool                     truncate = true; // false: an input over the context is an error
};

struct GenerateRequest {
    ModelFiles                model;
    PromptInput               prompt;
    ContextOptions            context;
    GenerateOptions           generate;
    std::optional<KeepAlive>  keep_alive;
    bool                      load_only = false; // empty prompt: load (or unload) and return
    std::optional<EmbedInput> embed;             // set: embed these inputs instead of generating
};

} // namespace specd
