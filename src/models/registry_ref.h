#pragma once
// Where a model is pulled from or pushed to: a name mapped to an OCI distribution registry,
// which serves
//   GET|PUT <base>/v2/<namespace>/<model>/manifests/<tag>
//   GET|HEAD <base>/v2/<namespace>/<model>/blobs/<digest>
//   POST <base>/v2/<namespace>/<model>/blobs/uploads/   (a push starts a blob upload)
// Ollama's registry (registry.ollama.ai, namespace "library") is the default host. hf.co and
// huggingface.co names (hf.co/USER/REPO:QUANT) go to Hugging Face's endpoint for Ollama,
// which speaks the same protocol, so one client serves both.
// Pure: no network; the environment is read only by RegistryConfig::from_env().
#include "models/model_name.h"

#include <string>
#include <string_view>

namespace specd::models {

inline constexpr std::string_view k_hf_default_endpoint = "https://hf.co";

struct RegistryConfig {
    // Plain http for any registry, as Ollama's `insecure` (loopback hosts use http anyway).
    bool        insecure = false;
    // Base URL for hf.co / huggingface.co names; empty is k_hf_default_endpoint.
    std::string hf_endpoint;

    // hf_endpoint from SPECD_HF_ENDPOINT (tests point it at a local registry).
    static RegistryConfig from_env();
};

struct RegistryRef {
    ModelName   name;        // what the pulled model is stored as
    std::string scheme;      // "http" or "https"
    std::string authority;   // "host[:port]"
    std::string path_prefix; // "" or "/some/path" (an endpoint URL with a path)
    std::string repository;  // "<namespace>/<model>", as typed
    std::string reference;   // the tag

    // "scheme://authority", what an HTTP client connects to.
    std::string origin() const;
    std::string manifest_path() const;
    std::string blob_path(std::string_view digest) const;
    std::string upload_path() const;
};

// Parses `text` (a model name, optionally with an http:// or https:// prefix) and maps it.
// Throws specd::Error(bad_request): an invalid name, http:// for a host that is neither
// loopback nor allowed by config.insecure, or a malformed hf_endpoint.
RegistryRef registry_ref(std::string_view text, const RegistryConfig & config = {});

// "localhost", "127.x.y.z", "::1", with or without a port.
bool is_loopback_authority(std::string_view authority);

// hf.co or huggingface.co, any case, no port.
bool is_hf_host(std::string_view host);

} // namespace specd::models
