#include "models/manifest.h"

#include <gtest/gtest.h>

using namespace specd::models;
using nlohmann::json;

namespace {

const std::string k_digest_a = "sha256:" + std::string(64, 'a');
const std::string k_digest_b = "sha256:" + std::string(64, 'b');

json sample() {
    return json::parse(R"({
      "schemaVersion": 2,
      "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
      "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                 "digest": "sha256:)" + std::string(64, 'a') + R"(", "size": 10},
      "layers": [{"mediaType": "application/vnd.ollama.image.model",
                  "digest": "sha256-)" + std::string(64, 'B') + R"(", "size": 1000}]
    })");
}

} // namespace

TEST(Manifest, ParsesAndNormalizesDigests) {
    const Manifest m = manifest_from_json(sample());
    EXPECT_EQ(m.config.digest, k_digest_a);
    ASSERT_EQ(m.layers.size(), 1u);
    EXPECT_EQ(m.layers[0].digest, k_digest_b); // "sha256-B..." becomes canonical
    EXPECT_EQ(m.layers[0].size, 1000u);
    EXPECT_EQ(m.total_size(), 1010u);
    ASSERT_NE(m.find(media_type::model), nullptr);
    EXPECT_EQ(m.find(media_type::system), nullptr);
    EXPECT_EQ(manifest_from_json(to_json(m)), m);
}

TEST(Manifest, RejectsBadStructure) {
    auto with = [](auto edit) {
        json j = sample();
        edit(j);
        return j;
    };
    const json cases[] = {
        json::array(),
        with([](json & j) { j["schemaVersion"] = 1; }),
        with([](json & j) { j.erase("schemaVersion"); }),
        with([](json & j) { j.erase("config"); }),
        with([](json & j) { j["layers"] = json::object(); }),
        with([](json & j) { j["layers"][0]["digest"] = "sha256:../../../etc/passwd"; }),
        with([](json & j) { j["config"]["digest"] = 7; }),
        with([](json & j) { j["layers"][0]["size"] = -1; }),
        with([](json & j) { j["layers"][0]["size"] = 1.5; }),
        with([](json & j) { j["layers"][0]["mediaType"] = ""; }),
        with([](json & j) {
            for (int i = 0; i < 300; ++i) {
                j["layers"].push_back(j["layers"][0]);
            }
        }),
    };
    for (const auto & c : cases) {
        EXPECT_THROW(manifest_from_json(c), std::invalid_argument) << c.dump().substr(0, 200);
    }
    EXPECT_THROW(parse_manifest("{not json"), std::invalid_argument);
}

TEST(Manifest, ConfigRoundTripAndLeniency) {
    ModelConfig c;
    c.model_family   = "llama";
    c.model_families = {"llama"};
    c.model_type     = "135M";
    c.file_type      = "F16";
    c.diff_ids       = {k_digest_a};
    EXPECT_EQ(config_from_json(to_json(c)), c);
    const ModelConfig odd = config_from_json(json{{"model_family", 3}, {"rootfs", "x"}});
    EXPECT_TRUE(odd.model_family.empty());
    EXPECT_TRUE(odd.diff_ids.empty());
}
