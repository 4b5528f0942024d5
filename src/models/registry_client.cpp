#include "models/registry_client.h"

#include "core/error.h"
#include "models/manifest.h"

#include <httplib.h>

#include <cstdlib>
#include <exception>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace specd::models {

namespace {

constexpr size_t k_max_error_body = 4096;

// The registry's own words from an error body ({"errors":[{"code","message"}]}), if any.
std::string registry_message(const std::string & body) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
        const auto & e = j["errors"][0];
        if (e.is_object() && e.contains("message") && e["message"].is_string()) {
            return e["message"].get<std::string>();
        }
    }
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
        return j["error"].get<std::string>();
    }
    return "";
}

// httplib's words for a failed request, with what to do about an untrusted certificate.
std::string transport_failure(httplib::Error error) {
    std::string out = httplib::to_string(error);
    if (error == httplib::Error::SSLServerVerification || error == httplib::Error::SSLServerHostnameVerification) {
        out += " (the registry's certificate is not trusted; for a private CA set SPECD_CA_FILE to its PEM file)";
    }
    return out;
}

std::string http_failure(int status, const std::string & body) {
    std::string out = "HTTP " + std::to_string(status);
    if (const std::string said = registry_message(body); !said.empty()) {
        out += ": " + said;
    }
    return out;
}

} // namespace

bool registry_tls_supported() {
#ifdef CPPHTTPLIB_SSL_ENABLED
    return true;
#else
    return false;
#endif
}

RegistryClient::RegistryClient(const RegistryRef & ref) : ref_(ref) {
    if (ref_.scheme == "https" && !registry_tls_supported()) {
        throw bad_request("cannot pull from " + ref_.origin() + ": this build of specd has no TLS support (cpp-httplib "
                          "was built without OpenSSL), so only http registries on loopback, or with \"insecure\": "
                          "true, can be used");
    }
    http_ = std::make_unique<httplib::Client>(ref_.origin());
#ifdef CPPHTTPLIB_SSL_ENABLED
    // Certificates are always verified. SPECD_CA_FILE (a PEM bundle) replaces the system's
    // trust store, for a registry with a private CA; OpenSSL's SSL_CERT_FILE works as well.
    if (const char * ca = std::getenv("SPECD_CA_FILE"); ca != nullptr && *ca != '\0' && ref_.scheme == "https") {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(ca, ec)) {
            throw bad_request("SPECD_CA_FILE names no readable file (" + std::filesystem::path(ca).filename().string() + ")");
        }
        http_->set_ca_cert_path(ca);
    }
#endif
    http_->set_connection_timeout(10);
    http_->set_read_timeout(60);
    http_->set_follow_location(true);
    http_->set_default_headers({{"User-Agent", "specd/" SPECD_VERSION}});
}

RegistryClient::~RegistryClient() = default;

std::string RegistryClient::get_manifest(size_t max_bytes) {
    std::string body;
    int         status    = 0;
    bool        too_large = false;
    const httplib::Headers headers = {{"Accept", std::string(media_type::manifest)}};
    auto res = http_->Get(
        ref_.manifest_path(), headers,
        [&](const httplib::Response & r) {
            status = r.status;
            if (status == 200 && r.has_header("Content-Length") && r.get_header_value_u64("Content-Length") > max_bytes) {
                too_large = true;
                return false;
            }
            return true;
        },
        [&](const char * data, size_t n) {
            const size_t cap = status == 200 ? max_bytes : k_max_error_body;
            if (n > cap - std::min(cap, body.size())) {
                if (status == 200) {
                    too_large = true;
                    return false;
                }
                body.append(data, cap - std::min(cap, body.size()));
                return true;
            }
            body.append(data, n);
            return true;
        });
    const std::string what = "pull model manifest from " + ref_.origin() + ref_.manifest_path();
    if (too_large) {
        throw Error(ErrorKind::internal, what + ": the manifest is larger than " + std::to_string(max_bytes) + " bytes");
    }
    if (!res) {
        throw Error(ErrorKind::internal, what + ": " + transport_failure(res.error()));
    }
    if (status == 404) {
        throw Error(ErrorKind::not_found, "pull model manifest: model \"" + ref_.name.display() +
                                              "\" not found in the registry (" + http_failure(status, body) + ")");
    }
    if (status != 200) {
        throw Error(ErrorKind::internal, what + ": " + http_failure(status, body));
    }
    return body;
}

void RegistryClient::get_blob(std::string_view digest, uint64_t offset, const std::function<void(bool)> & on_start,
                              const std::function<void(const char *, size_t)> & on_data) {
    const std::string  path = ref_.blob_path(digest);
    std::exception_ptr failed;
    std::string        error_body;
    int                status  = 0;
    bool               started = false;
    httplib::Headers   headers;
    if (offset > 0) {
        headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
    }
    auto res = http_->Get(
        path, headers,
        [&](const httplib::Response & r) {
            status = r.status;
            // "bytes <start>-<end>/<total>": a range other than the one asked for would
            // splice the wrong bytes onto the partial download.
            if (status == 206 && !r.get_header_value("Content-Range").starts_with("bytes " + std::to_string(offset) + "-")) {
                failed = std::make_exception_ptr(Error(ErrorKind::internal, "the registry answered the range request for " +
                                                                                std::string(digest) + " with another range"));
                return false;
            }
            return true;
        },
        [&](const char * data, size_t n) {
            if (status != 200 && status != 206) {
                error_body.append(data, std::min(n, k_max_error_body - std::min(k_max_error_body, error_body.size())));
                return true;
            }
            try {
                if (!started) {
                    started = true;
                    on_start(status == 200);
                }
                on_data(data, n);
                return true;
            } catch (...) {
                failed = std::current_exception();
                return false;
            }
        });
    if (failed) {
        std::rethrow_exception(failed);
    }
    const std::string what = "download of " + std::string(digest) + " from " + ref_.origin();
    if (!res) {
        throw Error(ErrorKind::internal, what + " failed: " + transport_failure(res.error()));
    }
    if (status == 416 && offset > 0) {
        // The range is past the end: the blob is not what the partial download was of.
        get_blob(digest, 0, on_start, on_data);
        return;
    }
    if (status != 200 && status != 206) {
        throw Error(ErrorKind::internal, what + " failed: " + http_failure(status, error_body));
    }
    if (!started) {
        on_start(status == 200); // an empty body
    }
}

} // namespace specd::models
