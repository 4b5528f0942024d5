#include "models/registry_client.h"

#include "core/error.h"
#include "models/manifest.h"

#include <httplib.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <vector>

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
    if (const std::string said = registry_message(body.substr(0, k_max_error_body)); !said.empty()) {
        out += ": " + said;
    }
    if (status == 401 || status == 403) {
        out += " (specd does not authenticate to registries)";
    }
    return out;
}

Error upstream(const std::string & message) { return Error(ErrorKind::upstream, message); }

// An HTTP client for `origin`, with the trust store and timeouts every registry request uses.
std::unique_ptr<httplib::Client> make_client(const std::string & origin) {
    auto http = std::make_unique<httplib::Client>(origin);
#ifdef CPPHTTPLIB_SSL_ENABLED
    // Certificates are always verified. SPECD_CA_FILE (a PEM bundle) replaces the system's
    // trust store, for a registry with a private CA; OpenSSL's SSL_CERT_FILE works as well.
    if (const char * ca = std::getenv("SPECD_CA_FILE"); ca != nullptr && *ca != '\0' && origin.starts_with("https://")) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(ca, ec)) {
            throw bad_request("SPECD_CA_FILE names no readable file (" + std::filesystem::path(ca).filename().string() + ")");
        }
        http->set_ca_cert_path(ca);
    }
#endif
    http->set_connection_timeout(10);
    http->set_read_timeout(60);
    http->set_write_timeout(60);
    http->set_follow_location(true);
    http->set_default_headers({{"User-Agent", "specd/" SPECD_VERSION}});
    return http;
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
    http_ = make_client(ref_.origin());
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

bool RegistryClient::has_blob(std::string_view digest) {
    const std::string path = ref_.blob_path(digest);
    auto              res  = http_->Head(path);
    if (!res) {
        throw upstream("cannot reach the registry at " + ref_.origin() + ": " + transport_failure(res.error()));
    }
    if (res->status == 200) return true;
    if (res->status == 404) return false;
    throw upstream("the registry at " + ref_.origin() + " answered HEAD " + path + " with " + http_failure(res->status, res->body));
}

std::string RegistryClient::start_upload() {
    const std::string path = ref_.upload_path();
    auto              res  = http_->Post(path, std::string(), "application/octet-stream");
    if (!res) {
        throw upstream("cannot reach the registry at " + ref_.origin() + ": " + transport_failure(res.error()));
    }
    if (res->status != 202) {
        throw upstream("the registry at " + ref_.origin() + " refused to start an upload (POST " + path + "): " +
                       http_failure(res->status, res->body));
    }
    std::string location = res->get_header_value("Location");
    if (location.empty()) {
        throw upstream("the registry at " + ref_.origin() + " started an upload without a Location");
    }
    return location;
}

void RegistryClient::put_blob(const std::string & location, std::string_view digest, uint64_t size,
                              const std::function<size_t(uint64_t, char *, size_t)> & read, bool & transport_failed) {
    transport_failed = false;
    // The Location is an absolute path, an absolute URL (possibly another host), or relative
    // to the uploads path.
    std::string origin = ref_.origin();
    std::string target = location;
    if (location.starts_with("http://") || location.starts_with("https://")) {
        const size_t slash = location.find('/', location.find("//") + 2);
        origin             = location.substr(0, slash);
        target             = slash == std::string::npos ? "/" : location.substr(slash);
    } else if (!location.starts_with("/")) {
        target = ref_.upload_path() + location;
    }
    if (origin.starts_with("https://") && !registry_tls_supported()) {
        throw upstream("the registry sends the upload to " + origin + ", and this build of specd has no TLS support");
    }
    // ':' of the digest escaped as Go's url.Values does; the Location's own query is sent
    // as the registry wrote it (path encoding off), so its state tokens arrive intact.
    target += (target.find('?') == std::string::npos ? "?digest=" : "&digest=");
    target += "sha256%3A" + std::string(digest.substr(7));
    auto http = make_client(origin);
    http->set_path_encode(false);

    std::exception_ptr failed;
    std::vector<char>  buf;
    auto res = http->Put(target, httplib::Headers{}, size_t(size),
        [&](size_t offset, size_t length, httplib::DataSink & sink) {
            try {
                buf.resize(std::min<size_t>(length, 1u << 20));
                const size_t n = read(offset, buf.data(), buf.size());
                return sink.write(buf.data(), n);
            } catch (...) {
                failed = std::current_exception();
                // Shut the socket: httplib would otherwise wait for an answer the registry,
                // still expecting the rest of the body, never sends.
                http->stop();
                return false;
            }
        },
        "application/octet-stream");
    if (failed) {
        std::rethrow_exception(failed);
    }
    const std::string what = "upload of " + std::string(digest) + " to " + origin;
    if (!res) {
        transport_failed = true;
        throw upstream(what + " failed: " + transport_failure(res.error()));
    }
    if (res->status != 201 && res->status != 200 && res->status != 204) {
        transport_failed = res->status >= 500;
        throw upstream(what + " failed: " + http_failure(res->status, res->body));
    }
}

void RegistryClient::put_manifest(const std::string & bytes) {
    const std::string path = ref_.manifest_path();
    auto              res  = http_->Put(path, bytes, std::string(media_type::manifest));
    if (!res) {
        throw upstream("push of the manifest to " + ref_.origin() + " failed: " + transport_failure(res.error()));
    }
    if (res->status != 201 && res->status != 200 && res->status != 202) {
        throw upstream("the registry at " + ref_.origin() + " refused the manifest (PUT " + path + "): " +
                       http_failure(res->status, res->body));
    }
}

} // namespace specd::models
