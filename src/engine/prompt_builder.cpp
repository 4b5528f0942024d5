#include "engine/prompt_builder.h"

#include "core/error.h"
#include "engine/text_cutter.h"
#include "templates/ollama_prompt.h"

namespace specd::engine {

namespace {

EndTokens tokenize_templated(const Model & model, const std::string & text, const PromptReading & reading) {
    EndTokens out = tokenize_ends(model, text, /*add_special=*/true, /*parse_special=*/true, reading.ends, reading.cancel);
    auto &    tokens = out.tokens;
    // Templates that write the BOS text themselves would otherwise get a second BOS.
    const llama_token bos = llama_vocab_bos(model.vocab());
    if (tokens.size() >= 2 && tokens[0] == bos && tokens[1] == bos) tokens.erase(tokens.begin());
    return out;
}

EndTokens fill_in_the_middle(const Model & model, const PromptInput & input, const PromptReading & reading) {
    const llama_vocab * v   = model.vocab();
    const llama_token   pre = llama_vocab_fim_pre(v);
    const llama_token   suf = llama_vocab_fim_suf(v);
    const llama_token   mid = llama_vocab_fim_mid(v);
    if (pre == LLAMA_TOKEN_NULL || suf == LLAMA_TOKEN_NULL || mid == LLAMA_TOKEN_NULL) {
        throw bad_request("this model does not support insert (suffix)");
    }
    // Each part keeps enough of both its ends for the whole to keep its own.
    EndTokens       prompt = tokenize_ends(model, input.prompt, false, false, reading.ends, reading.cancel);
    EndTokens       suffix = tokenize_ends(model, input.suffix, false, false, reading.ends, reading.cancel, "the suffix");
    EndTokens       out{{pre}, prompt.elided || suffix.elided};
    out.tokens.insert(out.tokens.end(), prompt.tokens.begin(), prompt.tokens.end());
    out.tokens.push_back(suf);
    out.tokens.insert(out.tokens.end(), suffix.tokens.begin(), suffix.tokens.end());
    out.tokens.push_back(mid);
    return out;
}

// Tools and `think` change the prompt only when asked for: other requests render exactly as
// they did before either existed.
std::string render(const ChatTemplate & jinja, const templates::GoTemplate * go, const std::vector<Message> & messages,
                   const PromptInput & input) {
    if (go) return templates::render_ollama_prompt(*go, messages, input.tools, input.think);
    if (input.tools.empty() && !input.think) return jinja.render(messages, true);
    return jinja.render_chat(messages, input.tools, input.think).prompt;
}

// The prompt of a request without images.
EndTokens build_text_prompt(const Model & model, const ChatTemplate & tmpl, const PromptInput & input,
                            const std::string & default_system, const templates::GoTemplate * go_template,
                            const PromptReading & reading) {
    if (input.kind == PromptInput::Kind::chat) {
        return tokenize_templated(model, render(tmpl, go_template, conversation_of(input, default_system), input), reading);
    }

    EndTokens out;
    if (!input.suffix.empty()) {
        out = fill_in_the_middle(model, input, reading);
    } else if (input.raw) {
        out = tokenize_ends(model, input.prompt, true, true, reading.ends, reading.cancel);
    } else {
        out = tokenize_templated(model, render(tmpl, go_template, conversation_of(input, default_system), input), reading);
    }

    if (!input.context.empty()) {
        std::vector<llama_token> & tokens  = out.tokens;
        const int32_t              n_vocab = llama_vocab_n_tokens(model.vocab());
        for (int32_t t : input.context) {
            if (t < 0 || t >= n_vocab) throw bad_request("context holds a token id outside the vocabulary");
        }
        if (!tokens.empty() && tokens.front() == llama_vocab_bos(model.vocab())) tokens.erase(tokens.begin());
        tokens.insert(tokens.begin(), input.context.begin(), input.context.end());
    }
    return out;
}

// One marker per image, then the text: where Ollama puts a message's images too.
std::string with_markers(size_t n_images, const std::string & text) {
    std::string out;
    for (size_t i = 0; i < n_images; ++i) out += std::string(Projector::marker()) + "\n";
    return out + text;
}

} // namespace

MultimodalPrompt build_multimodal_prompt(const Model & model, const ChatTemplate & tmpl, const PromptInput & input,
                                         const std::string & default_system, const Projector * projector,
                                         const templates::GoTemplate * go_template, const PromptReading & reading) {
    const std::vector<ImagePtr> images = input.all_images();
    if (images.empty()) {
        EndTokens text = build_text_prompt(model, tmpl, input, default_system, go_template, reading);
        return MultimodalPrompt{std::move(text.tokens), {}, nullptr, text.elided};
    }
    if (!projector) throw bad_request("this model does not support images (it has no vision projector)");
    if (!input.suffix.empty()) throw bad_request("images cannot be combined with suffix (insert)");

    // Text that itself contains the marker would shift every image after it.
    const auto check_text = [](const std::string & text) {
        if (text.find(Projector::marker()) != std::string::npos) {
            throw bad_request(std::string("the prompt contains the reserved image marker ") + Projector::marker());
        }
    };
    std::string text;
    if (input.kind == PromptInput::Kind::chat) {
        for (const Message & m : input.messages) check_text(m.content);
        std::vector<Message> messages = conversation_of(input, default_system);
        for (Message & m : messages) {
            m.content = with_markers(m.images.size(), m.content);
            m.images.clear();
        }
        text = render(tmpl, go_template, messages, input);
    } else {
        check_text(input.prompt);
        if (input.raw) {
            text = with_markers(input.images.size(), input.prompt);
        } else {
            std::vector<Message> messages = conversation_of(input, default_system);
            messages.back().content       = with_markers(input.images.size(), input.prompt);
            text = render(tmpl, go_template, messages, input);
        }
    }
    // No token is longer than max_token_bytes: a longer text cannot fit, and is not tokenized.
    if (reading.n_ctx > 0 && text.size() >= size_t(reading.n_ctx) &&
        text.size() / model.text_cutter().max_token_bytes() >= size_t(reading.n_ctx)) {
        throw bad_request("the prompt with its images is more than " + std::to_string(reading.n_ctx) +
                          " tokens, longer than the context length (" + std::to_string(text.size()) +
                          " bytes of text; a prompt with images is never truncated)");
    }
    MultimodalPrompt out = projector->tokenize(text, images, /*add_special=*/true);

    if (!input.context.empty()) {
        const int32_t n_vocab = llama_vocab_n_tokens(model.vocab());
        for (int32_t t : input.context) {
            if (t < 0 || t >= n_vocab) throw bad_request("context holds a token id outside the vocabulary");
        }
        size_t drop = (!out.tokens.empty() && out.tokens.front() == llama_vocab_bos(model.vocab())) ? 1 : 0;
        out.tokens.erase(out.tokens.begin(), out.tokens.begin() + static_cast<std::ptrdiff_t>(drop));
        out.tokens.insert(out.tokens.begin(), input.context.begin(), input.context.end());
        for (ImageSpan & span : out.images) span.start = span.start - drop + input.context.size();
    }
    return out;
}

} // namespace specd::engine
