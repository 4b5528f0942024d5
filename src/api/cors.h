#pragma once
// Which browser origins may call the API (CORS): Ollama's local defaults plus SPECD_ORIGINS
// (comma-separated, `*` wildcards; `*` alone allows every site, which lets any page the user
// visits drive the server). A request whose Origin is not allowed is refused before routing
// (route_guard.h).
#include <string>
#include <string_view>
#include <vector>

namespace specd::api {

class CorsPolicy {
  public:
    // `extra`: the SPECD_ORIGINS / OLLAMA_ORIGINS value ("" for none).
    explicit CorsPolicy(const std::string & extra);

    bool allows(const std::string & origin) const;

    // A preflight's Access-Control-Allow-Headers: what the official clients send from a
    // browser (Ollama's list), plus the `x-stainless-*` names the preflight asks for (the
    // openai package's; a list cannot hold a wildcard).
    std::string allowed_headers(std::string_view requested) const;

  private:
    std::vector<std::string> patterns_;
};

// Glob match where `*` matches any run of characters.
bool glob_match(const std::string & pattern, const std::string & text);

} // namespace specd::api
