#include "engine/backend.h"

#include <llama.h>
#include <ggml.h>
#include <mtmd-helper.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace specd::engine {

namespace {

struct Captured {
    std::vector<std::string> errors;
    std::vector<std::string> warnings;
    std::vector<std::string> buffers; // info lines reporting a buffer's size
};

thread_local LogCapture * tl_capture = nullptr;
thread_local Captured     tl_lines;
bool                      g_verbose = false;

void log_callback(ggml_log_level level, const char * text, void *) {
    if (tl_capture) {
        if (level == GGML_LOG_LEVEL_ERROR) tl_lines.errors.emplace_back(text);
        if (level == GGML_LOG_LEVEL_WARN) tl_lines.warnings.emplace_back(text);
        if (level == GGML_LOG_LEVEL_INFO && std::strstr(text, " buffer size = ")) tl_lines.buffers.emplace_back(text);
        if (level == GGML_LOG_LEVEL_INFO && tl_capture->on_info()) tl_capture->on_info()(text);
    }
    // llama.cpp is chatty at info level; specd shows its errors, everything with SPECD_DEBUG.
    if (g_verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

void one_line_abort(const char * message) {
    // "<source path>:<line>: <reason>": the path is the build machine's; its file name is enough.
    std::string text    = message ? message : "";
    const size_t reason = text.find(": ");
    const size_t slash  = text.rfind('/', reason);
    if (reason != std::string::npos && slash != std::string::npos) text.erase(0, slash + 1);
    text = "llama.cpp aborted: " + text + "\n";
    // The process is about to abort: write(2) straight to the descriptor, no stdio buffer.
    const ssize_t written = write(STDERR_FILENO, text.data(), text.size());
    (void)written;
}

} // namespace

void report_aborts_in_one_line() { ggml_set_abort_callback(one_line_abort); }

void ensure_backend() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char * debug = std::getenv("SPECD_DEBUG");
        g_verbose = debug && *debug && std::string(debug) != "0";
        llama_log_set(log_callback, nullptr);
        mtmd_helper_log_set(log_callback, nullptr); // mtmd and clip log on their own otherwise
        llama_backend_init();
    });
}

LogCapture::LogCapture(std::function<void(const char *)> on_info) : previous_(tl_capture), on_info_(std::move(on_info)) {
    tl_capture = this;
    tl_lines   = {};
}

LogCapture::~LogCapture() { tl_capture = previous_; }

std::string LogCapture::first_error() const {
    if (!tl_lines.errors.empty()) return trim(tl_lines.errors.front());
    if (!tl_lines.warnings.empty()) return trim(tl_lines.warnings.back());
    return "";
}

const std::vector<std::string> & LogCapture::buffer_lines() const { return tl_lines.buffers; }

} // namespace specd::engine
