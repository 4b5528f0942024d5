// /api/generate and /api/chat bodies -> GenerateRequest, as the server decodes them: the body,
// the model name, the fields, `format` -> grammar, keep_alive and the options merged over the
// model's. Every rejection must be specd::Error(bad_request); any other exception (it escapes
// and aborts), a crash or undefined behaviour is a finding.
#include "api/json_input.h"
#include "api/ollama_request.h"
#include "core/error.h"
#include "models/model_name.h"
#include "models/parameters.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

using namespace specd;

namespace {

void decode(const api::json & body, bool chat) {
    try {
        api::DecodedRequest d = chat ? api::decode_chat(body) : api::decode_generate(body);
        models::parse_or_throw(d.model);
        d.request.context.num_ctx = 4096; // the server's default, set before the options apply
        api::apply_options(models::Parameters{}, d.options, d.request);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    api::json body;
    try {
        body = api::parse_body(text);
    } catch (const Error & e) {
        if (e.kind() != ErrorKind::bad_request) __builtin_trap();
        return 0;
    }
    decode(body, false);
    decode(body, true);
    return 0;
}
