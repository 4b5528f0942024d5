#pragma once
// Access to the generated fixture models (tests/make-fixtures.sh) for integration tests.
#include "engine/model.h"
#include "engine/session.h"

#include <atomic>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace specd::fixtures {

inline std::filesystem::path fixture(const std::string & name) {
    const char * dir = std::getenv("SPECD_FIXTURES");
    return std::filesystem::path(dir ? dir : "fixtures") / name;
}

// One load per process and file: the models are read-only and shared by the tests.
inline std::shared_ptr<engine::Model> shared_model(const std::string & name) {
    static std::map<std::string, std::shared_ptr<engine::Model>> cache;
    auto & m = cache[name];
    if (!m) m = engine::Model::load(fixture(name), {});
    return m;
}

// The same for a model that drafts with the MTP layer it carries (loaded with that layer).
inline std::shared_ptr<engine::Model> shared_mtp_model(const std::string & name) {
    static std::map<std::string, std::shared_ptr<engine::Model>> cache;
    auto & m = cache[name];
    if (!m) m = engine::Model::load(fixture(name), {.load_mtp = true});
    return m;
}

// Temperature 0 (the argmax at every step), `n` tokens at most.
inline GenerateOptions greedy(int n) {
    GenerateOptions o;
    o.sampling.temperature = 0;
    o.num_predict          = n;
    return o;
}

// One generation's text (every emitted piece, joined) and result.
struct Output {
    std::string            text;
    engine::GenerateResult result;
    int                    pieces = 0;
};

// Runs one request on an idle session to its end, step by step, as the server's runner
// does; rethrows the error that ended it (specd::Error(cancelled) soon after `cancel`).
inline engine::GenerateResult run_to_end(engine::Session & s, engine::MultimodalPrompt prompt, const GenerateOptions & opts,
                                         const engine::TextSink & emit, const std::atomic<bool> & cancel,
                                         const engine::LogprobSink & emit_logprobs = {}) {
    if (s.running() != 0) throw std::logic_error("run_to_end needs an idle session");
    const uint64_t id = s.start(std::move(prompt), opts, emit, emit_logprobs, cancel);
    for (;;) {
        for (engine::SeqFinished & f : s.step()) {
            if (f.id != id) continue;
            if (f.error) std::rethrow_exception(f.error);
            return std::move(f.result);
        }
    }
}

inline engine::GenerateResult run_to_end(engine::Session & s, std::vector<llama_token> prompt, const GenerateOptions & opts,
                                         const engine::TextSink & emit, const std::atomic<bool> & cancel,
                                         const engine::LogprobSink & emit_logprobs = {}) {
    return run_to_end(s, engine::MultimodalPrompt{std::move(prompt), {}, nullptr}, opts, emit, cancel, emit_logprobs);
}

inline Output generate(engine::Session & s, const std::vector<llama_token> & prompt, const GenerateOptions & opts) {
    Output            out;
    std::atomic<bool> cancel{false};
    out.result = run_to_end(s, prompt, opts, [&](std::string_view t) { out.text += t; ++out.pieces; }, cancel);
    return out;
}

} // namespace specd::fixtures
