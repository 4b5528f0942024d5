#include "models/registry_ref.h"

#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

using namespace specd::models;

namespace {

const std::string k_digest = "sha256:" + std::string(64, 'a');

// The reason registry_ref() refuses `text` ("" when it maps it).
std::string refusal(std::string_view text, const RegistryConfig & config = {}) {
    try {
        registry_ref(text, config);
    } catch (const specd::Error & e) {
        EXPECT_EQ(e.kind(), specd::ErrorKind::bad_request) << text;
        return e.what();
    }
    return "";
}

} // namespace

TEST(RegistryRef, NamesMapToManifestUrls) {
    struct Case {
        const char * text;
        bool         insecure;
        const char * origin;
        const char * manifest;
        const char * stored_as; // ModelName::full()
    };
    const Case cases[] = {
        {"tiny", false, "https://registry.ollama.ai", "/v2/library/tiny/manifests/latest", "registry.ollama.ai/library/tiny:latest"},
        {"llama3.2:1b", false, "https://registry.ollama.ai", "/v2/library/llama3.2/manifests/1b", "registry.ollama.ai/library/llama3.2:1b"},
        {"me/tiny:v1", false, "https://registry.ollama.ai", "/v2/me/tiny/manifests/v1", "registry.ollama.ai/me/tiny:v1"},
        {"example.com:5000/team/m:t", false, "https://example.com:5000", "/v2/team/m/manifests/t", "example.com:5000/team/m:t"},
        {"example.com:5000/team/m:t", true, "http://example.com:5000", "/v2/team/m/manifests/t", "example.com:5000/team/m:t"},
        // Loopback registries (the tests' own) speak plain http without being asked.
        {"127.0.0.1:41234/ns/model:tag", false, "http://127.0.0.1:41234", "/v2/ns/model/manifests/tag", "127.0.0.1:41234/ns/model:tag"},
        {"localhost:8080/a/b", false, "http://localhost:8080", "/v2/a/b/manifests/latest", "localhost:8080/a/b:latest"},
        {"LocalHost/a/b:c", false, "http://LocalHost", "/v2/a/b/manifests/c", "LocalHost/a/b:c"},
        // An explicit scheme; the stored name leaves it out.
        {"http://127.0.0.1:5000/ns/m:t", false, "http://127.0.0.1:5000", "/v2/ns/m/manifests/t", "127.0.0.1:5000/ns/m:t"},
        {"https://127.0.0.1:5000/ns/m:t", false, "https://127.0.0.1:5000", "/v2/ns/m/manifests/t", "127.0.0.1:5000/ns/m:t"},
        {"http://example.com/ns/m:t", true, "http://example.com", "/v2/ns/m/manifests/t", "example.com/ns/m:t"},
        {"https://example.com/ns/m:t", false, "https://example.com", "/v2/ns/m/manifests/t", "example.com/ns/m:t"},
        // Hugging Face GGUF repositories: the quantization is the tag.
        {"hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", false, "https://hf.co",
         "/v2/bartowski/Llama-3.2-1B-Instruct-GGUF/manifests/Q4_K_M", "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M"},
        {"huggingface.co/user/repo", false, "https://hf.co", "/v2/user/repo/manifests/latest", "huggingface.co/user/repo:latest"},
        {"HF.CO/user/repo:Q8_0", true, "https://hf.co", "/v2/user/repo/manifests/Q8_0", "HF.CO/user/repo:Q8_0"},
    };
    for (const auto & c : cases) {
        RegistryConfig config;
        config.insecure       = c.insecure;
        const RegistryRef ref = registry_ref(c.text, config);
        EXPECT_EQ(ref.origin(), c.origin) << c.text;
        EXPECT_EQ(ref.manifest_path(), c.manifest) << c.text;
        EXPECT_EQ(ref.name.full(), c.stored_as) << c.text;
        EXPECT_EQ(ref.name, parse_or_throw(c.stored_as)) << c.text;
    }
}

TEST(RegistryRef, BlobUrls) {
    const RegistryRef ref = registry_ref("127.0.0.1:5000/ns/model:tag");
    EXPECT_EQ(ref.blob_path(k_digest), "/v2/ns/model/blobs/" + k_digest);
    EXPECT_EQ(ref.upload_path(), "/v2/ns/model/blobs/uploads/");
    RegistryConfig config;
    config.hf_endpoint = "https://mirror.example/hf";
    EXPECT_EQ(registry_ref("hf.co/user/repo:Q4_0", config).upload_path(), "/hf/v2/user/repo/blobs/uploads/");
}

TEST(RegistryRef, HuggingFaceEndpointFromConfig) {
    struct Case {
        const char * endpoint;
        const char * origin;
        const char * manifest;
    };
    const Case cases[] = {
        {"http://127.0.0.1:9999", "http://127.0.0.1:9999", "/v2/user/repo/manifests/Q4_0"},
        {"http://127.0.0.1:9999/", "http://127.0.0.1:9999", "/v2/user/repo/manifests/Q4_0"},
        {"https://mirror.example/hf", "https://mirror.example", "/hf/v2/user/repo/manifests/Q4_0"},
        {"https://mirror.example/a/b/", "https://mirror.example", "/a/b/v2/user/repo/manifests/Q4_0"},
    };
    for (const auto & c : cases) {
        RegistryConfig config;
        config.hf_endpoint    = c.endpoint;
        const RegistryRef ref = registry_ref("hf.co/user/repo:Q4_0", config);
        EXPECT_EQ(ref.origin(), c.origin) << c.endpoint;
        EXPECT_EQ(ref.manifest_path(), c.manifest) << c.endpoint;
        EXPECT_EQ(ref.blob_path(k_digest), std::string(c.manifest).replace(std::string(c.manifest).find("manifests/Q4_0"), 14, "blobs/" + k_digest));
        EXPECT_EQ(ref.name.host, "hf.co");
    }
    // Other hosts are not affected.
    RegistryConfig config;
    config.hf_endpoint = "http://127.0.0.1:9999";
    EXPECT_EQ(registry_ref("me/tiny", config).origin(), "https://registry.ollama.ai");
}

TEST(RegistryRef, Refusals) {
    struct Case {
        const char * text;
        const char * endpoint;
        const char * reason; // a fragment of the message
    };
    const Case cases[] = {
        {"http://example.com/ns/m:t", "", "insecure"},
        {"http://10.0.0.1:5000/ns/m:t", "", "insecure"},
        {"127.0.0.1.evil.example/ns/m", "", ""}, // not loopback, but a valid https name
        {"../../etc/passwd", "", "invalid model name"},
        {"a/b/c/d", "", "too many parts"},
        {"127.0.0.1:5000/../m:t", "", "'..'"},
        {"hf.co/user/..:q", "", "'..'"},
        {"ftp://example.com/ns/m", "", "scheme"},
        {"http://", "", "invalid model name"},
        {"", "", "empty"},
        {"hf.co/user/repo", "ftp://mirror", "SPECD_HF_ENDPOINT"},
        {"hf.co/user/repo", "http://", "no host"},
        {"hf.co/user/repo", "http://user@host", "invalid character"},
        {"hf.co/user/repo", "http://host/a?b=c", "invalid character"},
        {"hf.co/user/repo", "http://host/a/../b", "'..'"},
        {"hf.co/user/repo", "mirror.example", "http"},
    };
    for (const auto & c : cases) {
        RegistryConfig config;
        config.hf_endpoint = c.endpoint;
        const std::string why = refusal(c.text, config);
        if (std::string(c.reason).empty()) {
            EXPECT_EQ(why, "") << c.text;
        } else {
            EXPECT_NE(why.find(c.reason), std::string::npos) << c.text << " -> " << why;
        }
    }
    RegistryConfig insecure;
    insecure.insecure = true;
    EXPECT_EQ(refusal("http://example.com/ns/m:t", insecure), "");
}

TEST(RegistryRef, LoopbackAndHuggingFaceHosts) {
    struct Case {
        const char * authority;
        bool         loopback;
    };
    const Case cases[] = {
        {"localhost", true},       {"LOCALHOST:80", true},     {"127.0.0.1", true},
        {"127.0.0.1:5000", true},  {"127.1.2.3", true},        {"[::1]:5000", true},
        {"::1", true},             {"127.0.0.256", false},     {"127.0.0", false},
        {"127.0.0.1.nip.io", false}, {"localhost.example", false}, {"10.0.0.1", false},
        {"128.0.0.1", false},      {"example.com", false},     {"", false},
    };
    for (const auto & c : cases) {
        EXPECT_EQ(is_loopback_authority(c.authority), c.loopback) << c.authority;
    }
    EXPECT_TRUE(is_hf_host("hf.co"));
    EXPECT_TRUE(is_hf_host("HuggingFace.co"));
    EXPECT_FALSE(is_hf_host("hf.co:443"));
    EXPECT_FALSE(is_hf_host("hf.com"));
    EXPECT_FALSE(is_hf_host("xhf.co"));
}
