#include "prepare/answer_reader.h"

#include "core/error.h"
#include "engine/chat_template.h"
#include "engine/gguf_info.h"
#include "grammar/thinking_grammar.h"

#include <map>
#include <mutex>

namespace specd::prepare {

namespace {

AnswerPart part_of(engine::ChatDelta d) {
    AnswerPart p;
    p.content    = std::move(d.content);
    p.thinking   = std::move(d.thinking);
    p.tool_calls = std::move(d.tool_calls);
    return p;
}

// Ollama's test for a Go template: whether it mentions the variable at all.
bool go_uses(const std::string & text, const char * var) { return text.find(var) != std::string::npos; }

Error unsupported(const ModelFiles & m, const char * what) {
    return bad_request("model \"" + m.name + "\" does not support " + what);
}

// A model's Jinja template as api/ uses it, by GGUF path and manifest digest (a changed
// model is a new entry). Reading a header and analysing a template take tens of milliseconds
// (measured: ~70 ms for think.gguf's 151k-token vocabulary), each time a request used think
// or tools; a few stored models' templates are a few kilobytes each, so the cache is small
// and is simply emptied when it reaches k_max_templates.
std::shared_ptr<const engine::ChatTemplate> model_template(const ModelFiles & m) {
    constexpr size_t k_max_templates = 16;
    static std::mutex mu;
    static std::map<std::string, std::shared_ptr<const engine::ChatTemplate>> cache;
    const std::string key = m.gguf.string() + "\n" + m.digest;
    {
        std::lock_guard lock(mu);
        if (auto it = cache.find(key); it != cache.end()) return it->second;
    }
    auto tmpl = std::make_shared<const engine::ChatTemplate>(engine::read_gguf_info(m.gguf).chat_template);
    std::lock_guard lock(mu);
    if (cache.size() >= k_max_templates) cache.clear();
    cache.emplace(key, tmpl);
    return tmpl;
}

} // namespace

AnswerReader::AnswerReader(std::shared_ptr<const engine::ChatSyntax> syntax) :
    parser_(std::make_unique<engine::ChatOutputParser>(std::move(syntax))) {}

AnswerReader::AnswerReader(GoToolCallReader go) : go_(std::make_unique<GoToolCallReader>(std::move(go))) {}

AnswerPart AnswerReader::push(const std::string & text) {
    if (parser_) return part_of(parser_->push(text));
    return go_ ? go_->push(text) : AnswerPart(text);
}

AnswerPart AnswerReader::finish() {
    if (parser_) return part_of(parser_->finish());
    return go_ ? go_->finish() : AnswerPart();
}

AnswerReader prepare_answer(DecodedRequest & d) {
    PromptInput &       p        = d.request.prompt;
    const ModelFiles & m        = d.request.model;
    const bool         thinking = p.think && p.think->enabled;
    // A load (or unload) request renders nothing and answers nothing.
    if (p.tool_required && !d.request.load_only && !d.request.generate.grammar.empty()) {
        throw ParamError("tool_choice", "tool_choice that forces a call cannot be combined with a response format");
    }
    if (d.request.load_only || (!thinking && p.tools.empty())) return {};

    if (const auto & go = p.template_text ? p.template_text : m.template_text) {
        if (p.tool_required) {
            throw ParamError("tool_choice", "tool_choice that forces a call is not supported with an Ollama (Go) TEMPLATE yet");
        }
        if (thinking && !go_uses(*go, ".Think")) throw unsupported(m, "thinking");
        if (thinking) throw bad_request("think with an Ollama (Go) TEMPLATE is not supported yet by this server");
        if (!go_uses(*go, ".Tools")) throw ParamError("tools", unsupported(m, "tools").what());
        return AnswerReader(GoToolCallReader(go_tool_call_tag(*go), p.tools));
    }

    const auto                 shared = model_template(m);
    const engine::ChatTemplate & tmpl = *shared;
    const engine::ChatFeatures can = tmpl.features();
    if (thinking && !can.thinking) throw unsupported(m, "thinking");
    // OpenAI's clients read `param`; Ollama's error body has only the message.
    if (!p.tools.empty() && !can.tools) throw ParamError("tools", unsupported(m, "tools").what());
    // The same conversation the runner renders (its images' markers change no syntax).
    const engine::ChatRender r = tmpl.render_chat(engine::conversation_of(p, m.system), p.tools, p.think);
    if (thinking && r.thinking_end.empty()) throw unsupported(m, "thinking");

    GenerateOptions & g = d.request.generate;
    if (p.tool_required) {
        // The grammar of the template's call syntax over the tools a call may name: all of
        // them, or the forced one (the prompt still offers every tool). With `think` the
        // reasoning block comes first, as before a format.
        std::vector<Tool> callable;
        for (const Tool & t : p.tools) {
            if (p.tool_forced.empty() || t.name == p.tool_forced) callable.push_back(t);
        }
        if (callable.empty()) throw ParamError("tool_choice", "tool_choice names \"" + p.tool_forced + "\", which is not in tools");
        const engine::ChatRender forced = tmpl.render_chat(engine::conversation_of(p, m.system), callable, p.think, true);
        if (forced.tool_grammar.empty()) {
            throw ParamError("tool_choice", "model \"" + m.name + "\": llama.cpp has no grammar for its template's tool calls, so a "
                                            "call cannot be forced (tool_choice \"auto\" works)");
        }
        g.grammar              = forced.tool_grammar;
        g.end_on_complete_json = false;
    }
    if (thinking && !g.grammar.empty()) {
        grammar::ThinkingBlock block;
        block.open         = r.thinking_open ? "" : r.thinking_start;
        block.close        = r.thinking_end;
        block.budget_chars = d.thinking_budget_chars;
        g.grammar          = grammar::thinking_then(g.grammar, block);
        // The grammar ends the answer now: once the JSON after the block is complete only
        // end-of-generation is legal (the text as a whole is not JSON, so that check is off).
        g.end_on_complete_json = false;
    }
    return AnswerReader(r.syntax);
}

std::vector<std::string> template_capabilities(const std::optional<std::string> & go_template,
                                               const std::string & jinja_source) {
    std::vector<std::string> out;
    if (go_template) {
        // Not "thinking": `think` under a Go template is refused (see prepare_answer).
        if (go_uses(*go_template, ".Tools")) out.push_back("tools");
        return out;
    }
    const engine::ChatFeatures f = engine::ChatTemplate(jinja_source).features();
    if (f.tools) out.push_back("tools");
    if (f.thinking) out.push_back("thinking");
    return out;
}

} // namespace specd::prepare
