#pragma once
// Turns a request's prompt (generate or chat, templated or raw, fill-in-the-middle, with an
// earlier `context`) into the token sequence the model evaluates.
#include "core/request.h"
#include "engine/chat_template.h"
#include "engine/model.h"

#include <string>
#include <vector>

namespace specd::engine {

// `default_system` is the model's SYSTEM (a request's own system message wins).
// Throws specd::Error(bad_request) for what the model cannot do (suffix without FIM tokens,
// context tokens outside the vocabulary).
std::vector<llama_token> build_prompt(const Model & model, const ChatTemplate & tmpl, const PromptSpec & spec,
                                      const std::string & default_system);

} // namespace specd::engine
