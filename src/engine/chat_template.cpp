#include "engine/chat_template.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/chat_syntax.h"
#include "engine/content_stand_ins.h"

#include <llama.h>

namespace specd::engine {

namespace {

std::vector<common_chat_msg> to_common(const std::vector<Message> & messages) {
    std::vector<common_chat_msg> out;
    for (const auto & m : messages) {
        common_chat_msg msg;
        msg.role              = m.role;
        msg.content           = m.content;
        msg.reasoning_content = m.thinking;
        msg.tool_name         = m.tool_name;
        msg.tool_call_id      = m.tool_call_id;
        for (const auto & c : m.tool_calls) msg.tool_calls.push_back({c.name, c.arguments, c.id});
        out.push_back(std::move(msg));
    }
    return out;
}

// llama.cpp's grammar for a required call parses the whole assistant turn: its root starts
// with the generation prompt's text and lets free text (and a reasoning block) come before
// `tool-calls`, so as a sampling grammar it forces nothing. What a required call means is
// that rule alone: the root becomes `root ::= tool-calls`; every rule it uses stays. Empty
// when the grammar has no such rule (a template whose handler names its calls otherwise).
std::string forced_calls_grammar(const std::string & gbnf) {
    static const std::string rule = "\ntool-calls ::= ";
    if (("\n" + gbnf).find(rule) == std::string::npos) return "";
    std::string out;
    size_t      start = 0;
    while (start < gbnf.size()) {
        size_t end = gbnf.find('\n', start);
        if (end == std::string::npos) end = gbnf.size();
        const std::string line = gbnf.substr(start, end - start);
        // A rule's body may go on over several lines; only the root's first line names it.
        if (line.rfind("root ::= ", 0) == 0) {
            out += "root ::= tool-calls\n";
            // Its continuation lines (indented, or an alternative) go with it.
            start = end + 1;
            while (start < gbnf.size() && (gbnf[start] == ' ' || gbnf[start] == '\t' || gbnf[start] == '|')) {
                end   = gbnf.find('\n', start);
                start = end == std::string::npos ? gbnf.size() : end + 1;
            }
            continue;
        }
        out += line + "\n";
        start = end + 1;
    }
    return out;
}

common_chat_templates * init_or_null(const llama_model * model, const std::string & source) {
    try {
        return common_chat_templates_init(model, source).release();
    } catch (const std::exception &) {
        return nullptr; // an unparsable template: chatml serves instead
    }
}

} // namespace

std::vector<Message> conversation_of(const PromptInput & input, const std::string & default_system) {
    std::vector<Message> messages;
    if (input.kind == PromptInput::Kind::chat) {
        const bool has_system = !input.messages.empty() && input.messages.front().role == "system";
        if (!has_system && !default_system.empty()) messages.push_back(Message{"system", default_system});
        messages.insert(messages.end(), input.messages.begin(), input.messages.end());
        return messages;
    }
    const std::string & system = input.system.empty() ? default_system : input.system;
    if (!system.empty()) messages.push_back(Message{"system", system});
    messages.push_back(Message{"user", input.prompt});
    return messages;
}

void ChatTemplate::Deleter::operator()(common_chat_templates * t) const { common_chat_templates_free(t); }

ChatTemplate::ChatTemplate(const llama_model * model) {
    const char * src = llama_model_chat_template(model, nullptr);
    if (src) source_ = src;
    templates_.reset(init_or_null(model, ""));
    fallback_.reset(common_chat_templates_init(model, "chatml").release());
    features_ = probe_features();
}

ChatTemplate::ChatTemplate(const std::string & source) : source_(source) {
    // Without a model there are no BOS/EOS texts to offer the template: templates that
    // write them render differently here, but the answer's syntax does not depend on them.
    templates_.reset(init_or_null(nullptr, source.empty() ? "chatml" : source));
    fallback_.reset(common_chat_templates_init(nullptr, "chatml").release());
    features_ = probe_features();
}

ChatTemplate::~ChatTemplate() = default;

common_chat_params ChatTemplate::apply(const common_chat_templates_inputs & in) const {
    if (templates_) {
        try {
            return common_chat_templates_apply(templates_.get(), in);
        } catch (const std::exception &) {
            // Some templates reject valid conversations (e.g. a system message they do not
            // expect); chatml still gives the model the whole conversation.
        }
    }
    try {
        return common_chat_templates_apply(fallback_.get(), in);
    } catch (const std::exception & e) {
        throw bad_request(std::string("cannot render the chat template: ") + e.what());
    }
}

common_chat_params ChatTemplate::apply_to(common_chat_templates_inputs & in, const std::vector<Message> & messages) const {
    const ContentStandIns stand_ins(messages);
    if (!stand_ins.empty()) {
        in.messages          = to_common(stand_ins.messages());
        common_chat_params p = apply(in);
        if (auto prompt = stand_ins.restore(p.prompt)) {
            p.prompt = std::move(*prompt);
            return p;
        }
    }
    in.messages = to_common(messages);
    return apply(in);
}

std::string ChatTemplate::render(const std::vector<Message> & messages, bool add_generation_prompt) const {
    common_chat_templates_inputs in;
    in.add_generation_prompt = add_generation_prompt;
    in.use_jinja             = true;
    in.enable_thinking       = false;
    return apply_to(in, messages).prompt;
}

ChatRender ChatTemplate::render_chat(const std::vector<Message> & messages, const std::vector<Tool> & tools,
                                     const std::optional<ThinkSetting> & think, bool tool_required) const {
    common_chat_templates_inputs in;
    in.add_generation_prompt = true;
    in.use_jinja             = true;
    in.enable_thinking       = think && think->enabled;
    // deepseek: the reasoning is parsed out of the answer into its own field.
    in.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
    for (const auto & t : tools) in.tools.push_back({t.name, t.description, t.parameters});
    if (tool_required) in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
    if (think && think->enabled && !think->effort.empty()) {
        in.chat_template_kwargs["reasoning_effort"] = "\"" + think->effort + "\"";
    }
    const common_chat_params p = apply_to(in, messages);

    ChatRender out;
    out.prompt = p.prompt;
    if (tool_required) out.tool_grammar = forced_calls_grammar(p.grammar);
    if (in.enable_thinking && p.supports_thinking && !p.thinking_end_tags.empty()) {
        out.thinking_start = p.thinking_start_tag;
        out.thinking_end   = p.thinking_end_tags.front();
        // Templates such as DeepSeek-R1's write the start tag themselves (and a newline).
        const auto last   = p.prompt.find_last_not_of(" \t\r\n");
        const auto tagged = last == std::string::npos ? std::string() : p.prompt.substr(0, last + 1);
        out.thinking_open = !out.thinking_start.empty() && tagged.size() >= out.thinking_start.size() &&
                            tagged.compare(tagged.size() - out.thinking_start.size(), std::string::npos,
                                           out.thinking_start) == 0;
    }
    auto syntax                     = std::make_shared<ChatSyntax>();
    syntax->params                  = common_chat_parser_params(p);
    syntax->params.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
    syntax->params.parse_tool_calls = !tools.empty();
    if (!p.parser.empty()) syntax->params.parser.load(p.parser);
    out.syntax = std::move(syntax);
    return out;
}

ChatFeatures ChatTemplate::probe_features() const {
    if (!templates_) return {};
    ChatFeatures f;
    try {
        f.thinking = common_chat_templates_support_enable_thinking(templates_.get());
    } catch (const std::exception &) {
        f.thinking = false;
    }
    const auto caps = common_chat_templates_get_caps(templates_.get());
    // jinja::caps says true unless it finds otherwise; a template that never mentions tools
    // cannot render them, whatever the probe says.
    const auto it = caps.find("supports_tools");
    f.tools       = it != caps.end() && it->second && source_.find("tools") != std::string::npos;
    return f;
}

} // namespace specd::engine
