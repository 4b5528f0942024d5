#include "cli/commands.h"
#include "process/runner_host.h"

#include <cstdio>
#include <exception>

namespace specd::cli {

int cmd_runner(int fd) {
    try {
        return process::serve_runner(fd);
    } catch (const std::exception & e) {
        // The server reads this line as the runner's last words.
        std::fprintf(stderr, "specd runner: %s\n", e.what());
        return 1;
    }
}

} // namespace specd::cli
