#pragma once
// Table-driven grammar checks on the tiny fixture's vocabulary (its SPM byte-fallback
// tokens let GrammarProbe feed any text byte by byte), shared by the grammar tests.
#include "../engine/fixtures.h"
#include "grammar_probe.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace specd::grammar_test {

inline const GrammarProbe & probe() {
    static const GrammarProbe p(fixtures::shared_model("tiny.gguf")->vocab());
    return p;
}

// Expects llama.cpp to parse `gbnf`, to derive every `pass` text and none of `fail`. With
// `pass_must_be_json`, a pass text that is not JSON is an error in the table itself.
inline void check_gbnf(const std::string & name, const std::string & gbnf, const std::vector<std::string> & pass,
                       const std::vector<std::string> & fail, bool pass_must_be_json = true) {
    SCOPED_TRACE(name);
    auto g = probe().compile(gbnf);
    ASSERT_TRUE(g) << "llama.cpp rejected the grammar:\n" << gbnf;
    for (const auto & text : pass) {
        if (pass_must_be_json) EXPECT_TRUE(nlohmann::json::accept(text)) << "test table error, not JSON: " << text;
        EXPECT_TRUE(probe().accepts(g.get(), text)) << "rejected: " << text << "\n" << gbnf;
    }
    for (const auto & text : fail) EXPECT_FALSE(probe().accepts(g.get(), text)) << "accepted: " << text << "\n" << gbnf;
}

} // namespace specd::grammar_test
