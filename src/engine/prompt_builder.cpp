#include "engine/prompt_builder.h"

#include "core/error.h"
#include "templates/ollama_prompt.h"

namespace specd::engine {

namespace {

std::vector<llama_token> tokenize_templated(const Model & model, const std::string & text) {
    auto tokens = model.tokenize(text, /*add_special=*/true, /*parse_special=*/true);
    // Templates that write the BOS text themselves would otherwise get a second BOS.
    const llama_token bos = llama_vocab_bos(model.vocab());
    if (tokens.size() >= 2 && tokens[0] == bos && tokens[1] == bos) tokens.erase(tokens.begin());
    return tokens;
}

std::vector<llama_token> fill_in_the_middle(const Model & model, const PromptSpec & spec) {
    const llama_vocab * v   = model.vocab();
    const llama_token   pre = llama_vocab_fim_pre(v);
    const llama_token   suf = llama_vocab_fim_suf(v);
    const llama_token   mid = llama_vocab_fim_mid(v);
    if (pre == LLAMA_TOKEN_NULL || suf == LLAMA_TOKEN_NULL || mid == LLAMA_TOKEN_NULL) {
        throw bad_request("this model does not support insert (suffix)");
    }
    std::vector<llama_token> out{pre};
    for (auto t : model.tokenize(spec.prompt, false, false)) out.push_back(t);
    out.push_back(suf);
    for (auto t : model.tokenize(spec.suffix, false, false)) out.push_back(t);
    out.push_back(mid);
    return out;
}

// Tools and `think` change the prompt only when asked for: other requests render exactly as
// they did before either existed.
std::string render(const ChatTemplate & jinja, const templates::GoTemplate * go, const std::vector<Message> & messages,
                   const PromptSpec & spec) {
    if (go) return templates::render_ollama_prompt(*go, messages, spec.tools, spec.think);
    if (spec.tools.empty() && !spec.think) return jinja.render(messages, true);
    return jinja.render_chat(messages, spec.tools, spec.think).prompt;
}

} // namespace

std::vector<llama_token> build_prompt(const Model & model, const ChatTemplate & tmpl, const PromptSpec & spec,
                                      const std::string & default_system, const templates::GoTemplate * go_template) {
    std::vector<llama_token> tokens;
    if (spec.kind == PromptSpec::Kind::chat) {
        return tokenize_templated(model, render(tmpl, go_template, conversation_of(spec, default_system), spec));
    }

    if (!spec.suffix.empty()) {
        tokens = fill_in_the_middle(model, spec);
    } else if (spec.raw) {
        tokens = model.tokenize(spec.prompt, true, true);
    } else {
        tokens = tokenize_templated(model, render(tmpl, go_template, conversation_of(spec, default_system), spec));
    }

    if (!spec.context.empty()) {
        const int32_t n_vocab = llama_vocab_n_tokens(model.vocab());
        for (int32_t t : spec.context) {
            if (t < 0 || t >= n_vocab) throw bad_request("context holds a token id outside the vocabulary");
        }
        if (!tokens.empty() && tokens.front() == llama_vocab_bos(model.vocab())) tokens.erase(tokens.begin());
        tokens.insert(tokens.begin(), spec.context.begin(), spec.context.end());
    }
    return tokens;
}

namespace {

// One marker per image, then the text: where Ollama puts a message's images too.
std::string with_markers(size_t n_images, const std::string & text) {
    std::string out;
    for (size_t i = 0; i < n_images; ++i) out += std::string(Projector::marker()) + "\n";
    return out + text;
}

} // namespace

MultimodalPrompt build_multimodal_prompt(const Model & model, const ChatTemplate & tmpl, const PromptSpec & spec,
                                         const std::string & default_system, const Projector * projector,
                                         const templates::GoTemplate * go_template) {
    const std::vector<ImagePtr> images = spec.all_images();
    if (images.empty()) return MultimodalPrompt{build_prompt(model, tmpl, spec, default_system, go_template), {}, nullptr};
    if (!projector) throw bad_request("this model does not support images (it has no vision projector)");
    if (!spec.suffix.empty()) throw bad_request("images cannot be combined with suffix (insert)");

    // Text that itself contains the marker would shift every image after it.
    const auto check_text = [](const std::string & text) {
        if (text.find(Projector::marker()) != std::string::npos) {
            throw bad_request(std::string("the prompt contains the reserved image marker ") + Projector::marker());
        }
    };
    std::string text;
    if (spec.kind == PromptSpec::Kind::chat) {
        for (const Message & m : spec.messages) check_text(m.content);
        std::vector<Message> messages = conversation_of(spec, default_system);
        for (Message & m : messages) {
            m.content = with_markers(m.images.size(), m.content);
            m.images.clear();
        }
        text = render(tmpl, go_template, messages, spec);
    } else {
        check_text(spec.prompt);
        if (spec.raw) {
            text = with_markers(spec.images.size(), spec.prompt);
        } else {
            std::vector<Message> messages = conversation_of(spec, default_system);
            messages.back().content       = with_markers(spec.images.size(), spec.prompt);
            text = render(tmpl, go_template, messages, spec);
        }
    }
    MultimodalPrompt out = projector->tokenize(text, images, /*add_special=*/true);

    if (!spec.context.empty()) {
        const int32_t n_vocab = llama_vocab_n_tokens(model.vocab());
        for (int32_t t : spec.context) {
            if (t < 0 || t >= n_vocab) throw bad_request("context holds a token id outside the vocabulary");
        }
        size_t drop = (!out.tokens.empty() && out.tokens.front() == llama_vocab_bos(model.vocab())) ? 1 : 0;
        out.tokens.erase(out.tokens.begin(), out.tokens.begin() + static_cast<std::ptrdiff_t>(drop));
        out.tokens.insert(out.tokens.begin(), spec.context.begin(), spec.context.end());
        for (ImageSpan & span : out.images) span.start = span.start - drop + spec.context.size();
    }
    return out;
}

} // namespace specd::engine
