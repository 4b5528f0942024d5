#pragma once
// Renders chat messages into a prompt with the model's own (Jinja) chat template, through
// llama.cpp's template engine; chatml when the model has none or its template fails.
#include "core/request.h"

#include <memory>
#include <string>
#include <vector>

struct common_chat_templates;
struct llama_model;

namespace specd::engine {

class ChatTemplate {
  public:
    explicit ChatTemplate(const llama_model * model);
    ~ChatTemplate();
    ChatTemplate(const ChatTemplate &)             = delete;
    ChatTemplate & operator=(const ChatTemplate &) = delete;

    // The prompt text, ending with the assistant turn's opening when `add_generation_prompt`.
    std::string render(const std::vector<Message> & messages, bool add_generation_prompt) const;

    // The template's source text ("" when the model has none and chatml is used).
    const std::string & source() const { return source_; }

  private:
    struct Deleter {
        void operator()(common_chat_templates * t) const;
    };
    std::unique_ptr<common_chat_templates, Deleter> templates_;
    std::unique_ptr<common_chat_templates, Deleter> fallback_;
    std::string                                     source_;
};

} // namespace specd::engine
