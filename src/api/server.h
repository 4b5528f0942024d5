#pragma once
// The HTTP server: Ollama's routes and the OpenAI-compatible /v1 subset over the scheduler
// and the model store.
#include "api/cors.h"
#include "api/generation_writer.h"
#include "api/ollama_request.h"
#include "cache/prompt_cache.h"
#include "models/store.h"
#include "scheduler/scheduler.h"

#include <functional>
#include <memory>
#include <string>

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace specd::api {

struct ServerConfig {
    std::string           host = "127.0.0.1";
    int                   port = 11434;
    std::filesystem::path models_dir;
    size_t                max_body_bytes = 64ull << 20; // SPECD_MAX_BODY: JSON bodies (413 above); blob uploads stream to disk
    int32_t               default_num_ctx = 4096;      // fixed, never derived from memory size
    std::string           origins;                     // SPECD_ORIGINS: extra allowed CORS origins
    bool                  no_draft = false;            // --no-draft / SPECD_NO_DRAFT: speculation off
    // SPECD_UNSEEDED_SAMPLING=rejection: requests without a seed verify drafts by rejection
    // sampling (with a seed, always the seeded draw: reproducible text).
    bool                  unseeded_rejection = false;
    std::string           api_key;                     // SPECD_API_KEY: required as a Bearer token
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
    // Stops accepting, cancels queued work, unloads models. Safe from a signal-watching thread.
    void stop();

  private:
    void register_routes();
    // Given the resolved model's name, the writer that shapes the answer (Ollama or OpenAI).
    using WriterFactory = std::function<std::unique_ptr<GenerationWriter>(const std::string & model)>;
    void serve_generation(const httplib::Request & req, httplib::Response & res, DecodedRequest d,
                          const WriterFactory & make_writer);

    ServerConfig                     cfg_;
    models::Store                    store_;
    cache::PromptCache               prompt_cache_; // before the scheduler: runners use it
    scheduler::Scheduler             scheduler_;
    CorsPolicy                       cors_;
    std::unique_ptr<httplib::Server> http_;
};

} // namespace specd::api
