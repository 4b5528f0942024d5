#pragma once
// The server: Ollama's routes and the OpenAI-compatible /v1 subset over the scheduler and
// the model store, served by the HTTP transport in http/. Routes are registered by family
// (routes.h); what every request passes before its route is in route_guard.h.
#include "api/cors.h"
#include "cache/prompt_cache.h"
#include "http/limits.h"
#include "http/router.h"
#include "models/store.h"
#include "scheduler/scheduler.h"

#include <memory>
#include <string>

namespace specd::http {
class Server;
}

namespace specd::api {

struct ServerConfig {
    std::string           host = "127.0.0.1";
    int                   port = 11434;
    std::filesystem::path models_dir;
    http::Limits          limits;                 // body size, deadlines, connection caps (http/limits.h)
    int32_t               default_num_ctx = 4096; // fixed, never derived from memory size
    std::string           origins;                // SPECD_ORIGINS: extra allowed browser origins
    bool                  no_draft = false;       // --no-draft / SPECD_NO_DRAFT: speculation off
    // SPECD_STRICT_SCHEMA: a `format` schema keyword the grammar cannot enforce is a 400
    // instead of a warning.
    bool                  strict_schema = false;
    // SPECD_UNSEEDED_SAMPLING (default rejection): requests without a seed verify drafts by
    // rejection sampling, which accepts more than the coupled seeded draw (bench/results/
    // coupling.md); `seeded` gives them the seeded draw too. With a seed, always the seeded
    // draw: reproducible text.
    bool                  unseeded_rejection = true;
    std::string           api_key;                // SPECD_API_KEY: required as a Bearer token
    size_t                prompt_cache_bytes = cache::default_prompt_cache_budget(); // SPECD_PROMPT_CACHE; 0: off
    scheduler::SchedulerConfig scheduler;
};

class Server {
  public:
    explicit Server(ServerConfig cfg);
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
    models::Store                 store_;
    cache::PromptCache            prompt_cache_; // before the scheduler: runners use it
    scheduler::Scheduler          scheduler_;
    CorsPolicy                    cors_;
    http::Router                  router_;
    std::unique_ptr<http::Server> http_;
};

} // namespace specd::api
