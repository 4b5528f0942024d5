// /api/generate and /api/chat bodies -> GenerateRequest, as the server decodes them: the body,
// the model name, the fields, `format` -> grammar, keep_alive and the options merged over the
// model's; the same body as /v1/chat/completions and /v1/completions. Every rejection must be
// specd::Error(bad_request); any other exception (it escapes and aborts), a crash or undefined
// behaviour is a finding, and so are OpenAI options that the translation accepted and
// apply_options then refuses (its errors would name Ollama's fields, not the client's).
#include "api/ollama_request.h"
#include "api/openai_request.h"
#include "core/error.h"
#include "core/json_input.h"
#include "models/model_name.h"
#include "models/parameters.h"
#include "prepare/options.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace specd;

namespace {

void decode(const json & body, bool chat) {
    try {
        api::DecodedRequest d = chat ? api::decode_chat(body) : api::decode_generate(body);
        models::parse_or_throw(d.model);
        d.request.context.num_ctx = 4096; // the server's default, set before the options apply
        std::vector<std::string> warnings;
        prepare::apply_options(models::Parameters{}, d.options, d.request, warnings);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
    }
}

void decode_openai(const json & body, bool chat) {
    api::OpenAIRequest r;
    try {
        r = chat ? api::decode_openai_chat(body) : api::decode_openai_completion(body);
        models::parse_or_throw(r.decoded.model);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
        return;
    }
    r.decoded.request.context.num_ctx = 4096;
    try {
        std::vector<std::string> warnings;
        prepare::apply_options(models::Parameters{}, r.decoded.options, r.decoded.request, warnings);
    } catch (const Error &) {
        __builtin_trap();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    json body;
    try {
        body = parse_body(text);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
        return 0;
    }
    decode(body, false);
    decode(body, true);
    decode_openai(body, true);
    decode_openai(body, false);
    return 0;
}
