#include "api/logprobs_json.h"

#include "api/ollama_response.h"

#include <gtest/gtest.h>

using namespace specd;
using namespace specd::api;

TEST(LogprobsJson, OllamaChunksCarryTheirTokens) {
    const std::vector<TokenLogprob> lps = {{"a", -0.1f, {}}, {"b", -2.0f, {{"b", -2.0f}, {"c", -3.0f}}}};
    const json j = text_chunk("tiny", "ab", false, lps);
    ASSERT_EQ(j["logprobs"].size(), 2u);
    EXPECT_EQ(j["logprobs"][0], json::parse(R"({"token":"a","logprob":-0.10000000149011612,"bytes":[97]})"));
    EXPECT_FALSE(j["logprobs"][0].contains("top_logprobs")); // Ollama omits an empty list
    EXPECT_EQ(j["logprobs"][1]["top_logprobs"][1]["token"], "c");
    EXPECT_FALSE(text_chunk("tiny", "ab", true).contains("logprobs"));
    // Chat chunks too; the final non-streamed object carries them all.
    EXPECT_EQ(final_chunk("tiny", scheduler::DoneInfo{}, true, "ab", lps)["logprobs"].size(), 2u);
    EXPECT_EQ(logprobs_json(lps, true)[0]["top_logprobs"], json::array());
}
