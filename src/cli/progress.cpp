#include "cli/progress.h"

#include "cli/client.h"
#include "cli/human_format.h"
#include "cli/terminal.h"

#include <algorithm>
#include <cstdio>

namespace specd::cli {

using json = nlohmann::json;

ProgressPrinter::ProgressPrinter() : tty_(stderr_is_terminal()) {}

ProgressPrinter::~ProgressPrinter() { end_bar(); }

void ProgressPrinter::end_bar() {
    if (open_line_) std::fputc('\n', stderr);
    open_line_ = false;
}

void ProgressPrinter::show(const ProgressLine & p) {
    if (p.total == 0) {
        end_bar();
        // A status repeated (a server's last "success" after the store's) is shown once.
        if (p.status != last_status_) std::fprintf(stderr, "%s\n", p.status.c_str());
        last_status_ = p.status;
        bar_key_.clear();
        std::fflush(stderr);
        return;
    }
    const std::string key = p.digest.empty() ? p.status : p.digest;
    if (key != bar_key_) {
        end_bar();
        bar_key_  = key;
        bar_done_ = false;
    }
    if (bar_done_) return;
    last_status_          = p.status;
    const bool   done     = p.completed >= p.total;
    const double fraction = p.total ? std::min(1.0, double(p.completed) / double(p.total)) : 1.0;
    const int    percent  = int(fraction * 100);
    if (tty_) {
        constexpr int width  = 25;
        const int     filled = int(fraction * width);
        std::string   bar;
        for (int i = 0; i < width; ++i) bar += i < filled ? "█" : " ";
        const std::string size =
            done ? human_bytes(p.total) : human_bytes(p.completed) + "/" + human_bytes(p.total);
        std::fprintf(stderr, "\r\033[K%s: %3d%% ▕%s▏ %s", p.status.c_str(), percent, bar.c_str(), size.c_str());
        open_line_ = true;
    } else if (done) {
        std::fprintf(stderr, "%s: 100%% %s\n", p.status.c_str(), human_bytes(p.total).c_str());
    }
    if (done) {
        bar_done_ = true;
        end_bar();
    }
    std::fflush(stderr);
}

std::string stream_progress(ApiClient & c, const std::string & path, const json & body, ProgressPrinter & printer) {
    std::string error;
    const int   status = c.stream(path, body, [&](const json & line) {
        if (!line.is_object()) return true;
        if (line.contains("error")) {
            error = line["error"].is_string() ? line["error"].get<std::string>() : line["error"].dump();
            return false;
        }
        printer.show({line.value("status", ""), line.value("digest", ""), line.value("total", uint64_t(0)),
                      line.value("completed", uint64_t(0))});
        return true;
    });
    if (!error.empty()) return error;
    if (status == 0) return "could not connect to the server";
    if (status != 200) return "the server answered HTTP " + std::to_string(status);
    return "";
}

} // namespace specd::cli
