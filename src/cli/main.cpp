// specd: every user-facing command is a subcommand of this one binary.
#include "cli/arguments.h"
#include "memory/allocator.h"

#include <csignal>

int main(int argc, char ** argv) {
    specd::memory::configure_allocator(); // before anything allocates much (docs/memory.md)
    // A server that closes a connection while a command still writes to it (an upload it
    // refused) is an error to report, not a signal that ends the process silently.
    std::signal(SIGPIPE, SIG_IGN);
    return specd::cli::run_command_line(argc, argv);
}
