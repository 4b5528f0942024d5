#pragma once
// Talks to an OCI distribution registry (cpp-httplib). Pull: a manifest, capped in size, and
// blobs streamed to a callback, from an offset with a Range request. Push: HEAD for a blob the
// registry has, a monolithic upload (POST for a session, PUT <location>?digest= with the
// bytes), and the manifest PUT last. Redirects are followed (registries send blobs to a CDN).
// Every request has bounded connect, read and write timeouts. https certificates are verified against the system's
// CAs, or the PEM bundle SPECD_CA_FILE names; a build without TLS support refuses https
// registries with a clear error rather than a failed connection.
#include "models/registry_ref.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace httplib {
class Client;
}

namespace specd::models {

// False when this build's HTTP client has no TLS (cpp-httplib without OpenSSL).
bool registry_tls_supported();

class RegistryClient {
  public:
    // Throws specd::Error(bad_request) for an https registry in a build without TLS.
    explicit RegistryClient(const RegistryRef & ref);
    ~RegistryClient();
    RegistryClient(const RegistryClient &)             = delete;
    RegistryClient & operator=(const RegistryClient &) = delete;

    // The manifest's bytes. Throws specd::Error: not_found when the registry has no such
    // model or tag, internal for any other failure (unreachable, HTTP error, larger than
    // max_bytes).
    std::string get_manifest(size_t max_bytes);

    // Streams a blob from `offset` (a Range request when it is not 0). on_start(from_zero)
    // runs before the first byte: from_zero is true when the registry ignored the range and
    // sends the whole blob. on_data receives the bytes; an exception from either callback
    // ends the transfer and is rethrown. Returns normally when the response ended (possibly
    // short: the caller checks the size); throws specd::Error(internal) for an HTTP error or
    // a broken connection.
    void get_blob(std::string_view digest, uint64_t offset, const std::function<void(bool from_zero)> & on_start,
                  const std::function<void(const char * data, size_t size)> & on_data);

    // Push. Failures of the registry (unreachable, an HTTP error status, an answer that breaks
    // the protocol) throw specd::Error(upstream) with the registry's own words when it sent any.

    // HEAD of a blob: true when the registry has it.
    bool has_blob(std::string_view digest);

    // Starts an upload session (POST .../blobs/uploads/); returns its Location, a path or an
    // absolute URL.
    std::string start_upload();

    // Sends a blob's `size` bytes to an upload session and closes it with its digest
    // (PUT <location>?digest=...). `read(offset, buf, max)` fills buf with the bytes at
    // offset and returns how many (at least 1, at most max); an exception from it ends the
    // upload before the registry has the whole blob, and is rethrown. `transport_failed` is
    // set when the failure was the connection's (worth a retry with a new session).
    void put_blob(const std::string & location, std::string_view digest, uint64_t size,
                  const std::function<size_t(uint64_t offset, char * buf, size_t max)> & read, bool & transport_failed);

    // PUT .../manifests/<tag> with the manifest's bytes, its media type as Content-Type.
    void put_manifest(const std::string & bytes);

  private:
    RegistryRef                      ref_;
    std::unique_ptr<httplib::Client> http_;
};

} // namespace specd::models
