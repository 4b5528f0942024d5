#include "prepare/generation.h"

#include "core/error.h"
#include "prepare/model_catalog.h"
#include "prepare/options.h"
#include "prepare/prompt_size.h"

#include <cstdio>
#include <utility>

namespace specd::prepare {

namespace {

void log_warnings(const std::string & model, const std::vector<std::string> & warnings) {
    for (const std::string & w : warnings) std::fprintf(stderr, "specd: %s: %s\n", model.c_str(), w.c_str());
}

} // namespace

PreparedGeneration prepare_generation(const models::Store & store, const Settings & settings, DecodedRequest d) {
    const ServedModel m = catalog_resolve(store, d.model);
    if (!m.files.projector && !d.request.prompt.all_images().empty()) {
        throw bad_request("model \"" + m.files.name + "\" does not support images (it has no vision projector)");
    }
    d.request.model = m.files;
    if (d.request.prompt.kind == PromptInput::Kind::chat && !d.request.load_only && !m.messages.empty()) {
        // As Ollama: the model's MESSAGEs are the start of every conversation with it.
        auto & messages = d.request.prompt.messages;
        messages.insert(messages.begin(), m.messages.begin(), m.messages.end());
    }
    d.request.context.num_ctx = settings.default_num_ctx;
    if (!d.schema_unenforced.empty()) {
        // As Ollama, a schema with keywords the grammar cannot enforce is served (without
        // them, said in warnings); strict, it is refused as before.
        if (settings.strict_schema) {
            throw bad_request("invalid format: unsupported JSON schema feature " + d.schema_unenforced.front() +
                              " (SPECD_STRICT_SCHEMA is set)");
        }
        for (const std::string & w : d.schema_unenforced) d.warnings.push_back("format: " + w);
    }
    apply_options(m.params, d.options, d.request, d.warnings);
    log_warnings(m.files.name, d.warnings);
    check_prompt_text(d.request.prompt, d.request.context.num_ctx); // before anything renders it
    if (settings.no_draft) d.request.generate.draft_num_predict = 0;
    if (settings.unseeded_rejection && d.request.generate.sampling.seed < 0) d.request.generate.rejection_sampling = true;
    AnswerReader reader = prepare_answer(d);
    return {m.files.name, std::move(d.request), std::move(reader), std::move(d.warnings)};
}

void prepare_embedding(const models::Store & store, const Settings & settings, const std::string & model,
                       const json & options, GenerateRequest & request) {
    const ServedModel m       = catalog_resolve(store, model);
    request.model             = m.files;
    request.context.num_ctx   = settings.default_num_ctx;
    std::vector<std::string> warnings;
    apply_options(m.params, options, request, warnings);
    log_warnings(m.files.name, warnings);
}

} // namespace specd::prepare
