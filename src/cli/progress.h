#pragma once
// Progress of pull, push and create on stderr, as Ollama's CLI shows it: each status once,
// and a bar per layer (digest) with its percentage and size. On a terminal the bar is redrawn
// in place; otherwise one line is printed when a layer completes.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace specd::cli {

class ApiClient;

struct ProgressLine {
    std::string status;
    std::string digest; // empty for lines about the whole model
    uint64_t    total     = 0;
    uint64_t    completed = 0;
};

class ProgressPrinter {
  public:
    ProgressPrinter();
    ~ProgressPrinter();
    ProgressPrinter(const ProgressPrinter &)             = delete;
    ProgressPrinter & operator=(const ProgressPrinter &) = delete;

    void show(const ProgressLine & p);
    // A line about the whole model ("gathering model components", "success").
    void status(const std::string & text) { show({text, "", 0, 0}); }

  private:
    void end_bar();

    bool        tty_;
    bool        open_line_ = false;
    bool        bar_done_  = false;
    std::string bar_key_;
    std::string last_status_;
};

// Streams a POST whose answer is NDJSON progress lines (/api/pull, /api/push, /api/create)
// into `printer`; returns the error message (the server's own) or "" on success.
std::string stream_progress(ApiClient & c, const std::string & path, const nlohmann::json & body,
                            ProgressPrinter & printer);

} // namespace specd::cli
