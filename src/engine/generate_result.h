#pragma once
// What a finished generation reports, as plain data: the engine fills it in, the scheduler
// hands it to the API inside its done event (scheduler/job.h), with no llama.cpp type in it.
#include "core/options.h"
#include "spec/depth_controller.h"

#include <cstdint>
#include <string>
#include <vector>

namespace specd::engine {

struct GenerateResult {
    DoneReason               reason = DoneReason::stop;
    GenerateStats            stats;
    spec::DepthStats         speculation;
    GrammarDraftStats        grammar_drafts;
    std::vector<int64_t>     k_histogram; // [k]: rounds that drafted k tokens
    std::vector<int32_t>     context;     // prompt + generated tokens, Ollama's `context`
    // What drafted besides forced text: "prompt-lookup" alone, or with "draft-model" or a
    // head's kind ("gemma4-assistant"; engine/draft_kind).
    std::string              drafter = "prompt-lookup";
};

} // namespace specd::engine
