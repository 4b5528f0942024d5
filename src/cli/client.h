#pragma once
// The CLI's side of the API: talks to a running server, as Ollama's CLI does.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace httplib {
class Client;
}

namespace specd::cli {

class ApiClient {
  public:
    ApiClient(const std::string & host, int port);
    ~ApiClient();
    ApiClient(ApiClient &&) noexcept;

    // The client for SPECD_HOST (else OLLAMA_HOST, else 127.0.0.1:11434).
    static ApiClient configured();

    // True when a server answers at the address.
    bool server_up();
    // "could not connect to the server at HOST:PORT; ..." for the error line.
    std::string unreachable_message() const;

    // Returns the status (0 when unreachable); `out` receives the response body.
    int request(const std::string & method, const std::string & path, const nlohmann::json & body, std::string & out);

    // POSTs a file's bytes as the body, streamed from disk; `progress(sent, total)` follows
    // the upload. Returns the status (0 when no answer came: `out` then says why) and the
    // response body in `out`.
    int upload(const std::string & path, const std::string & file, std::string & out,
               const std::function<void(uint64_t sent, uint64_t total)> & progress = {});

    // Streams NDJSON lines of a POST; returns the HTTP status (0 when unreachable). A non-200
    // answer's body is passed to on_line once (Ollama's {"error": ...}). on_line returning
    // false ends the stream (the connection is closed, which cancels the request).
    int stream(const std::string & path, const nlohmann::json & body,
               const std::function<bool(const nlohmann::json & line)> & on_line);

  private:
    std::string                      host_;
    int                              port_;
    std::unique_ptr<httplib::Client> http_;
};

// The server's {"error": "..."} message as it is, else "HTTP <status>".
std::string error_message(const std::string & body, int status);

} // namespace specd::cli
