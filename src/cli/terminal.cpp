#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/word_wrap.h"

#include <algorithm>
#include <cstdio>

namespace specd::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

int terminal_width() {
    winsize ws{};
    if (!stdout_is_terminal() || ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return 0;
    return ws.ws_col;
}

std::string format_table(const std::vector<std::vector<std::string>> & rows) {
    std::vector<size_t> widths;
    for (const auto & row : rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            if (widths.size() <= i) widths.push_back(0);
            widths[i] = std::max(widths[i], static_cast<size_t>(text_columns(row[i])));
        }
    }
    std::string out;
    for (const auto & row : rows) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) line += std::string(widths[i] + 4 - static_cast<size_t>(text_columns(row[i])), ' ');
        }
        out += line + "\n";
    }
    return out;
}

int fail(const std::string & message) {
    std::string line = message;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    for (char & c : line) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    std::fflush(stdout);
    std::fprintf(stderr, "Error: %s\n", line.c_str());
    return 1;
}

} // namespace specd::cli
