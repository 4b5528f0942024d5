#pragma once
// Renders chat messages into a prompt with the model's own (Jinja) chat template, through
// llama.cpp's template engine; chatml when the model has none or its template fails.
#include "core/request.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

struct common_chat_templates;
struct common_chat_templates_inputs;
struct common_chat_params;
struct llama_model;

namespace specd::engine {

// What a template can do beyond plain turns, as llama.cpp's chat code reads it.
struct ChatFeatures {
    bool thinking = false; // renders differently with enable_thinking (a reasoning block)
    bool tools    = false; // renders the tools it is given
};

// How one request's answer reads (the format llama.cpp detected for the template and
// inputs); opaque here, used by ChatOutputParser (chat_output.h).
struct ChatSyntax;

// A prompt with what is needed to read the answer to it.
struct ChatRender {
    std::string prompt;
    std::string thinking_start; // "<think>"; empty when the template does not reason
    std::string thinking_end;   // "</think>"
    // The prompt already opens the reasoning block: the answer starts inside it.
    bool        thinking_open = false;
    std::shared_ptr<const ChatSyntax> syntax;
    // With a required tool call: a grammar whose answer is one or more calls in the template's
    // syntax to the tools given (llama.cpp's rule for them); empty when it has none.
    std::string tool_grammar;
};

// The conversation a templated prompt renders: chat's messages, or generate's system and
// prompt as two turns; `default_system` (the model's SYSTEM) first unless a system message is.
std::vector<Message> conversation_of(const PromptInput & input, const std::string & default_system);

class ChatTemplate {
  public:
    explicit ChatTemplate(const llama_model * model);
    // From a template's source text alone ("" for chatml), without a model: how api/ learns
    // what a stored model's template can do and how to read its answers before loading it.
    explicit ChatTemplate(const std::string & source);
    ~ChatTemplate();
    ChatTemplate(const ChatTemplate &)             = delete;
    ChatTemplate & operator=(const ChatTemplate &) = delete;

    // The prompt text, ending with the assistant turn's opening when `add_generation_prompt`.
    std::string render(const std::vector<Message> & messages, bool add_generation_prompt) const;

    // The prompt for an answer to `messages`, with `tools` offered and reasoning on or off
    // (unset: off, as render() does). Deterministic: api/ renders the same inputs to get
    // the syntax that the runner's prompt was rendered with. `tool_required`: also the
    // grammar of a call to one of `tools` (ChatRender::tool_grammar).
    ChatRender render_chat(const std::vector<Message> & messages, const std::vector<Tool> & tools,
                           const std::optional<ThinkSetting> & think, bool tool_required = false) const;

    ChatFeatures features() const { return features_; }

    // The template's source text ("" when the model has none and chatml is used).
    const std::string & source() const { return source_; }

  private:
    // Renders the template with and without thinking: once, at construction.
    ChatFeatures probe_features() const;
    // The model's template, chatml where it throws; a 400 when both do.
    common_chat_params apply(const common_chat_templates_inputs & in) const;
    // apply() on `messages`, their long contents stood in for while the template renders
    // (content_stand_ins.h).
    common_chat_params apply_to(common_chat_templates_inputs & in, const std::vector<Message> & messages) const;

    struct Deleter {
        void operator()(common_chat_templates * t) const;
    };
    std::unique_ptr<common_chat_templates, Deleter> templates_;
    std::unique_ptr<common_chat_templates, Deleter> fallback_;
    std::string                                     source_;
    ChatFeatures                                    features_;
};

} // namespace specd::engine
