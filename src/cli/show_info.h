#pragma once
// `specd show MODEL` and `/show info`: an /api/show answer as Ollama's CLI prints it (Model,
// Capabilities, Projector, Parameters, System, License; with verbose, every metadata key).
#include <nlohmann/json.hpp>

#include <string>

namespace specd::cli {

std::string show_info_text(const nlohmann::json & show, bool verbose);

} // namespace specd::cli
