#include "models/registry_ref.h"

#include "core/error.h"

#include <algorithm>
#include <cstdlib>

namespace specd::models {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// The host of "host", "host:port", "[v6]" or "[v6]:port".
std::string_view host_of(std::string_view authority) {
    if (authority.starts_with('[')) {
        const size_t close = authority.find(']');
        return close == std::string_view::npos ? authority : authority.substr(1, close - 1);
    }
    const size_t colon = authority.find(':');
    if (colon != authority.rfind(':')) {
        return authority; // a bare IPv6 address has no port
    }
    return colon == std::string_view::npos ? authority : authority.substr(0, colon);
}

bool is_ipv4_loopback(std::string_view host) {
    if (!host.starts_with("127.")) {
        return false;
    }
    int parts = 0;
    for (size_t start = 0; start <= host.size(); ++parts) {
        size_t dot = host.find('.', start);
        if (dot == std::string_view::npos) {
            dot = host.size();
        }
        const std::string_view part = host.substr(start, dot - start);
        if (part.empty() || part.size() > 3 || !std::all_of(part.begin(), part.end(), is_digit) ||
            std::stoi(std::string(part)) > 255) {
            return false;
        }
        start = dot + 1;
    }
    return parts == 4;
}

struct Endpoint {
    std::string scheme, authority, path_prefix;
};

// "http[s]://authority[/path]" and nothing more (no user info, query or fragment).
Endpoint parse_endpoint(std::string_view url, std::string_view what) {
    const auto bad = [&](const std::string & why) {
        return bad_request(std::string(what) + " is not a usable registry URL (" + why + "): expected http[s]://host[:port][/path]");
    };
    Endpoint e;
    if (url.starts_with("https://")) {
        e.scheme = "https";
        url.remove_prefix(8);
    } else if (url.starts_with("http://")) {
        e.scheme = "http";
        url.remove_prefix(7);
    } else {
        throw bad("no http:// or https://");
    }
    while (url.ends_with('/')) {
        url.remove_suffix(1);
    }
    const size_t slash = url.find('/');
    e.authority        = std::string(url.substr(0, slash));
    if (slash != std::string_view::npos) {
        e.path_prefix = std::string(url.substr(slash));
    }
    if (e.authority.empty()) {
        throw bad("no host");
    }
    for (char c : e.authority) {
        if (!is_alnum(c) && c != '.' && c != '-' && c != '_' && c != ':' && c != '[' && c != ']') {
            throw bad("invalid character in the host");
        }
    }
    for (char c : e.path_prefix) {
        if (!is_alnum(c) && c != '/' && c != '.' && c != '-' && c != '_' && c != '~') {
            throw bad("invalid character in the path");
        }
    }
    if (e.path_prefix.find("/../") != std::string::npos || e.path_prefix.ends_with("/..")) {
        throw bad("'..' in the path");
    }
    return e;
}

} // namespace

RegistryConfig RegistryConfig::from_env() {
    RegistryConfig config;
    if (const char * hf = std::getenv("SPECD_HF_ENDPOINT"); hf != nullptr && *hf != '\0') {
        config.hf_endpoint = hf;
    }
    return config;
}

std::string RegistryRef::origin() const { return scheme + "://" + authority; }

std::string RegistryRef::manifest_path() const {
    return path_prefix + "/v2/" + repository + "/manifests/" + reference;
}

std::string RegistryRef::blob_path(std::string_view digest) const {
    return path_prefix + "/v2/" + repository + "/blobs/" + std::string(digest);
}

std::string RegistryRef::upload_path() const { return path_prefix + "/v2/" + repository + "/blobs/uploads/"; }

bool is_loopback_authority(std::string_view authority) {
    const std::string_view host = host_of(authority);
    return iequals(host, "localhost") || host == "::1" || is_ipv4_loopback(host);
}

bool is_hf_host(std::string_view host) { return iequals(host, "hf.co") || iequals(host, "huggingface.co"); }

RegistryRef registry_ref(std::string_view text, const RegistryConfig & config) {
    std::string explicit_scheme;
    for (std::string_view scheme : {"http", "https"}) {
        const std::string prefix = std::string(scheme) + "://";
        if (text.size() > prefix.size() && iequals(text.substr(0, prefix.size()), prefix)) {
            explicit_scheme = scheme;
            text.remove_prefix(prefix.size());
        }
    }
    RegistryRef ref;
    ref.name       = parse_or_throw(text);
    ref.repository = ref.name.ns + "/" + ref.name.model;
    ref.reference  = ref.name.tag;

    if (is_hf_host(ref.name.host)) {
        const std::string endpoint = config.hf_endpoint.empty() ? std::string(k_hf_default_endpoint) : config.hf_endpoint;
        Endpoint e      = parse_endpoint(endpoint, config.hf_endpoint.empty() ? "the Hugging Face endpoint" : "SPECD_HF_ENDPOINT");
        ref.scheme      = std::move(e.scheme);
        ref.authority   = std::move(e.authority);
        ref.path_prefix = std::move(e.path_prefix);
        return ref;
    }

    ref.authority       = ref.name.host;
    const bool loopback = is_loopback_authority(ref.authority);
    if (explicit_scheme == "http" && !loopback && !config.insecure) {
        throw bad_request("plain http is only used for loopback registries; set \"insecure\": true (specd pull "
                          "--insecure) to pull from " + ref.authority + " without TLS");
    }
    if (!explicit_scheme.empty()) {
        ref.scheme = explicit_scheme;
    } else {
        ref.scheme = loopback || config.insecure ? "http" : "https";
    }
    return ref;
}

} // namespace specd::models
