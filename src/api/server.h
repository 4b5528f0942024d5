#pragma once
// The server: Ollama's routes and the OpenAI-compatible /v1 subset over the scheduler and
// the model store, served by the HTTP transport in http/. Routes are registered by family
// (routes.h); what every request passes before its route is in route_guard.h. What it
// serves (the store, the scheduler) is built by the composition root, cli/serve_command.cpp.
#include "api/cors.h"
#include "http/limits.h"
#include "http/router.h"
#include "memory/prompt_cache_stats.h"
#include "models/store.h"
#include "prepare/generation.h"
#include "scheduler/scheduler.h"

#include <functional>
#include <memory>
#include <string>

namespace specd::http {
class Server;
}

namespace specd::api {

struct ServerConfig {
    std::string       host = "127.0.0.1";
    int               port = 11434;
    http::Limits      limits;      // body size, deadlines, connection caps (http/limits.h)
    std::string       origins;     // SPECD_ORIGINS: extra allowed browser origins
    std::string       api_key;     // SPECD_API_KEY: required as a Bearer token
    prepare::Settings preparation; // what shapes every request (prepare/generation.h)
};

// What the routes serve. Every part outlives the server.
struct ServerParts {
    models::Store &                           store;
    scheduler::Scheduler &                    scheduler;
    std::function<memory::PromptCacheStats()> prompt_cache_stats;
};

class Server {
  public:
    Server(ServerConfig cfg, ServerParts parts);
    ~Server();

    // Throws std::runtime_error when the address is taken or unavailable.
    void bind();
    // Serves until stop().
    void listen();
    // Stops accepting, cancels queued work, closes connections, unloads models. Safe from a
    // signal-watching thread.
    void stop();

  private:
    ServerConfig                  cfg_;
    ServerParts                   parts_;
    CorsPolicy                    cors_;
    http::Router                  router_;
    std::unique_ptr<http::Server> http_;
};

} // namespace specd::api
