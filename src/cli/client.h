#pragma once
// The CLI's side of the API: talks to a running server, as Ollama's CLI does.
#include <nlohmann/json.hpp>

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

    // True when a server answers at the address.
    bool server_up();

    // Returns the status; `body` receives the response body.
    int request(const std::string & method, const std::string & path, const nlohmann::json & body, std::string & out);

    // POSTs a file's bytes as the body, streamed from disk; returns the status.
    int upload(const std::string & path, const std::string & file);

    // Streams NDJSON lines of a POST; returns the HTTP status (0 when unreachable).
    int stream(const std::string & path, const nlohmann::json & body,
               const std::function<bool(const nlohmann::json & line)> & on_line);

  private:
    std::unique_ptr<httplib::Client> http_;
};

} // namespace specd::cli
