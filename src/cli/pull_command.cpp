// `specd pull NAME [--insecure]`: through the running server's /api/pull when one answers,
// else straight into the store. Progress goes to stderr: a bar per layer on a terminal, one
// line per layer and status otherwise.
#include "cli/client.h"
#include "cli/commands.h"
#include "core/settings.h"
#include "models/pull.h"

#include <unistd.h>

#include <cstdio>

namespace specd::cli {

namespace {

using json = nlohmann::json;

std::string human_size(uint64_t bytes) {
    char buf[32];
    if (bytes < 1000) std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
    else if (bytes < 1000000) std::snprintf(buf, sizeof(buf), "%.0f KB", bytes / 1e3);
    else if (bytes < 1000000000) std::snprintf(buf, sizeof(buf), "%.0f MB", bytes / 1e6);
    else std::snprintf(buf, sizeof(buf), "%.1f GB", bytes / 1e9);
    return buf;
}

class ProgressPrinter {
  public:
    ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}
    ~ProgressPrinter() { end_bar(); }

    void show(const models::PullProgress & p) {
        if (p.digest.empty()) {
            end_bar();
            if (p.status != last_status_) std::fprintf(stderr, "%s\n", p.status.c_str());
            last_status_ = p.status;
            return;
        }
        if (p.digest != bar_digest_) {
            end_bar();
            bar_digest_ = p.digest;
            bar_done_   = false;
        }
        if (bar_done_) return;
        const bool done = p.completed >= p.total;
        if (tty_) {
            const int  width  = 30;
            const double part = p.total ? double(p.completed) / double(p.total) : 1.0;
            const int  filled = int(part * width);
            std::fprintf(stderr, "\r\033[K%s: %3d%% [%s%s] %s/%s", p.status.c_str(), int(part * 100),
                         std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                         human_size(p.completed).c_str(), human_size(p.total).c_str());
            open_line_ = true;
        } else if (done) {
            std::fprintf(stderr, "%s: %s\n", p.status.c_str(), human_size(p.total).c_str());
        }
        if (done) {
            bar_done_ = true;
            end_bar();
        }
        std::fflush(stderr);
    }

  private:
    void end_bar() {
        if (open_line_) std::fputc('\n', stderr);
        open_line_ = false;
    }

    bool        tty_;
    bool        open_line_ = false;
    bool        bar_done_  = false;
    std::string bar_digest_;
    std::string last_status_;
};

int fail(const std::string & message) {
    std::fprintf(stderr, "Error: %s\n", message.c_str());
    return 1;
}

} // namespace

int cmd_pull(const Args & args) {
    std::string name;
    bool        insecure = false;
    for (const auto & a : args) {
        if (a == "--insecure") insecure = true;
        else if (name.empty()) name = a;
        else return fail("unexpected argument: " + a);
    }
    if (name.empty()) return fail("usage: specd pull NAME [--insecure]");
    try {
        ProgressPrinter printer;
        const HostPort  hp = configured_host();
        ApiClient       c(hp.host, hp.port);
        if (c.server_up()) {
            std::string error;
            const int   status = c.stream("/api/pull", {{"model", name}, {"insecure", insecure}}, [&](const json & line) {
                if (!line.is_object()) return true;
                if (line.contains("error")) {
                    error = line["error"].is_string() ? line["error"].get<std::string>() : line.dump();
                    return false;
                }
                printer.show({line.value("status", ""), line.value("digest", ""), line.value("total", uint64_t(0)),
                              line.value("completed", uint64_t(0))});
                return true;
            });
            if (status == 0 && error.empty()) error = "could not connect to the server";
            if (status != 200 && error.empty()) error = "HTTP " + std::to_string(status);
            return error.empty() ? 0 : fail(error);
        }
        models::Store       store(configured_models_dir());
        models::PullOptions options;
        options.registry          = models::RegistryConfig::from_env();
        options.registry.insecure = insecure;
        options.progress          = [&](const models::PullProgress & p) { printer.show(p); };
        models::pull_model(store, name, std::move(options));
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

} // namespace specd::cli
