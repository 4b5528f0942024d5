#pragma once
// Access to the generated fixture models (tests/make-fixtures.sh) for integration tests.
#include "engine/model.h"
#include "engine/session.h"

#include <atomic>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
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

inline Output generate(engine::Session & s, const std::vector<llama_token> & prompt, const GenerateOptions & opts) {
    Output            out;
    std::atomic<bool> cancel{false};
    out.result = s.generate(prompt, opts, [&](std::string_view t) { out.text += t; ++out.pieces; }, cancel);
    return out;
}

} // namespace specd::fixtures
