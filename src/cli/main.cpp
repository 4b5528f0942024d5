// specd: every user-facing command is a subcommand of this one binary.
#include "cli/arguments.h"

int main(int argc, char ** argv) { return specd::cli::run_command_line(argc, argv); }
