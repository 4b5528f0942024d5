#pragma once
// Process-wide llama.cpp set-up: backend initialisation (once) and where its log goes.
#include <functional>
#include <string>
#include <vector>

namespace specd::engine {

// Initialises the llama.cpp backend once per process; safe to call from any thread.
void ensure_backend();

// For a runner process: an abort inside llama.cpp or ggml (GGML_ASSERT, a lost RPC worker)
// writes one line, "llama.cpp aborted: <file>:<line>: <reason>", before the process ends,
// instead of attaching a debugger for a backtrace (seconds, and its last line says nothing).
// The server reads a runner's last line as the reason it ended.
void report_aborts_in_one_line();

// While alive on a thread, collects llama.cpp's warnings and errors logged on that thread,
// so a failed load can say why instead of "failed to load".
class LogCapture {
  public:
    // `on_info`: also called with each info-level line this thread logs while capturing
    // (the quantizer reads its per-tensor progress from them).
    explicit LogCapture(std::function<void(const char *)> on_info = {});
    ~LogCapture();
    LogCapture(const LogCapture &)             = delete;
    LogCapture & operator=(const LogCapture &) = delete;

    // The first error-level line (the root cause; later ones tend to say "failed to load"),
    // else the last warning, trimmed.
    std::string first_error() const;
    // llama.cpp's "<name> buffer size = <n> MiB" lines logged so far (what it allocated).
    const std::vector<std::string> & buffer_lines() const;

    const std::function<void(const char *)> & on_info() const { return on_info_; }

  private:
    LogCapture *                      previous_;
    std::function<void(const char *)> on_info_;
};

} // namespace specd::engine
