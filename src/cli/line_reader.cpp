#include "cli/line_reader.h"

#include "cli/interrupt.h"

// readline's headers use FILE without including stdio.h.
#include <cstdio>
#include <readline/history.h>
#include <readline/readline.h>

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace specd::cli {

namespace {

constexpr int k_history_lines = 1000;

// What the callback handler received for the line being read (readline calls back a plain
// function; one line is read at a time).
struct Pending {
    bool                       done = false;
    std::optional<std::string> line; // nullopt: end of input (Ctrl+D)
};
Pending g_pending;

void on_line(char * text) {
    g_pending.done = true;
    if (text) {
        g_pending.line = text;
        std::free(text);
    }
    rl_callback_handler_remove(); // leaves the terminal as it was while the answer prints
}

} // namespace

LineReader::LineReader(std::filesystem::path history_file) : history_file_(std::move(history_file)) {
    rl_catch_signals = 0; // Ctrl+C is ours (interrupt.h)
    rl_readline_name = "specd";
    using_history();
    stifle_history(k_history_lines);
    if (!history_file_.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(history_file_.parent_path(), ec);
        read_history(history_file_.c_str());
    }
}

LineReader::~LineReader() {
    if (!history_file_.empty()) write_history(history_file_.c_str());
    clear_history();
}

LineReader::Status LineReader::read(const std::string & prompt, std::string & line) {
    g_pending = Pending{};
    take_interrupt(); // a Ctrl+C that stopped the last answer is spent
    rl_callback_handler_install(prompt.c_str(), on_line);
    while (!g_pending.done) {
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {interrupt_fd(), POLLIN, 0}};
        if (::poll(fds, interrupt_fd() >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[1].revents & POLLIN && take_interrupt()) {
            line = rl_line_buffer ? rl_line_buffer : "";
            rl_free_line_state();
            rl_callback_sigcleanup();
            rl_callback_handler_remove();
            std::fputs("\n", stdout);
            std::fflush(stdout);
            return Status::interrupted;
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) rl_callback_read_char();
    }
    if (!g_pending.done) rl_callback_handler_remove();
    if (!g_pending.line) return Status::eof;
    line = *g_pending.line;
    if (history_ && !line.empty()) add_history(line.c_str());
    return Status::line;
}

} // namespace specd::cli
