#pragma once
// Which browser origins may call the API (CORS): Ollama's local defaults plus SPECD_ORIGINS
// (comma-separated, `*` wildcards), so a web UI served from elsewhere must be allowed
// explicitly.
#include <string>
#include <vector>

namespace specd::api {

class CorsPolicy {
  public:
    // `extra`: the SPECD_ORIGINS / OLLAMA_ORIGINS value ("" for none).
    explicit CorsPolicy(const std::string & extra);

    bool allows(const std::string & origin) const;

  private:
    std::vector<std::string> patterns_;
};

// Glob match where `*` matches any run of characters.
bool glob_match(const std::string & pattern, const std::string & text);

} // namespace specd::api
