#pragma once
// `specd run MODEL` on a terminal without a prompt: Ollama's interactive mode. Lines are
// chat messages; `/set`, `/show`, `/load`, `/save`, `/clear`, `/bye`, `/?` are commands (an
// unknown one is reported, never sent); `"""` opens a multi-line message.
#include "cli/answer_stream.h"
#include "models/parameters.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace specd::cli {

class ApiClient;

// What a request carries besides the messages; `/set` changes it.
struct SessionSettings {
    std::string                model;
    models::Parameters         params; // /set parameter: options over the model's own
    std::optional<std::string> system;
    nlohmann::json             format;     // null, "json" or a schema
    nlohmann::json             think;      // null, a bool or a level
    nlohmann::json             keep_alive; // null or a duration
    AnswerDisplay              display;
};

// The body of /api/chat (or, with `prompt` set and no messages, /api/generate).
nlohmann::json request_body(const SessionSettings & s);

int run_interactive(ApiClient & c, SessionSettings settings);

} // namespace specd::cli
