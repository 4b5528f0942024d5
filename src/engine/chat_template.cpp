#include "engine/chat_template.h"

#include "core/error.h"
#include "engine/backend.h"

#include <chat.h>
#include <llama.h>

namespace specd::engine {

void ChatTemplate::Deleter::operator()(common_chat_templates * t) const { common_chat_templates_free(t); }

ChatTemplate::ChatTemplate(const llama_model * model) {
    const char * src = llama_model_chat_template(model, nullptr);
    if (src) source_ = src;
    try {
        templates_.reset(common_chat_templates_init(model, "").release());
    } catch (const std::exception &) {
        templates_.reset(); // an unparsable template: chatml below serves instead
    }
    fallback_.reset(common_chat_templates_init(model, "chatml").release());
}

ChatTemplate::~ChatTemplate() = default;

std::string ChatTemplate::render(const std::vector<Message> & messages, bool add_generation_prompt) const {
    common_chat_templates_inputs in;
    in.add_generation_prompt = add_generation_prompt;
    in.use_jinja             = true;
    in.enable_thinking       = false;
    for (const auto & m : messages) {
        common_chat_msg msg;
        msg.role    = m.role;
        msg.content = m.content;
        in.messages.push_back(std::move(msg));
    }
    if (templates_) {
        try {
            return common_chat_templates_apply(templates_.get(), in).prompt;
        } catch (const std::exception &) {
            // Some templates reject valid conversations (e.g. a system message they do not
            // expect); chatml still gives the model the whole conversation.
        }
    }
    try {
        return common_chat_templates_apply(fallback_.get(), in).prompt;
    } catch (const std::exception & e) {
        throw bad_request(std::string("cannot render the chat template: ") + e.what());
    }
}

} // namespace specd::engine
