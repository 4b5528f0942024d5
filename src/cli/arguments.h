#pragma once
// The command line: every subcommand, its flags (in any position; unknown ones are errors)
// and `--help` on each, parsed with CLI11, then the command run.
namespace specd::cli {

// Parses argv and runs the command; returns the process exit code.
int run_command_line(int argc, char ** argv);

} // namespace specd::cli
