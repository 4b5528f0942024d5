#pragma once
// Turns a request's prompt (generate or chat, templated or raw, fill-in-the-middle, with an
// earlier `context`) into the token sequence the model evaluates.
#include "core/request.h"
#include "engine/chat_template.h"
#include "engine/model.h"
#include "engine/projector.h"
#include "engine/prompt_ends.h"
#include "templates/go_template.h"

#include <atomic>
#include <string>
#include <vector>

namespace specd::engine {

// How much of a long prompt is tokenized: with `ends` set (ends_kept() of the context), a
// prompt far over the context only at the ends truncation keeps (MultimodalPrompt::elided),
// with `cancel` checked as it goes. A prompt with images is never truncated: one whose text
// alone is longer than the context could hold is refused before it is tokenized.
struct PromptReading {
    EndsNeeded                ends; // {0, 0}: the whole prompt
    const std::atomic<bool> * cancel = nullptr;
    int32_t                   n_ctx  = 0; // for the images check; 0: none
};

// The tokens of a request's prompt. `default_system` is the model's SYSTEM (a request's own
// system message wins). With `go_template` (a TEMPLATE in Ollama's Go syntax, the request's
// or the model's) messages are rendered as Ollama renders them; otherwise with the GGUF's own
// (Jinja) chat template. Each image goes where its marker lands (before its message's text,
// or the generate prompt's), tokenized by `projector`. Throws specd::Error(bad_request) for
// what the model cannot do: suffix without FIM tokens, context tokens outside the vocabulary,
// images when `projector` is null (the model has no vision) or with `suffix`.
MultimodalPrompt build_multimodal_prompt(const Model & model, const ChatTemplate & tmpl, const PromptInput & input,
                                         const std::string & default_system, const Projector * projector,
                                         const templates::GoTemplate * go_template = nullptr,
                                         const PromptReading & reading = {});

} // namespace specd::engine
