#pragma once
// The CLI subcommands. Each returns the process exit code.
#include <string>
#include <vector>

namespace specd::cli {

using Args = std::vector<std::string>;

int cmd_serve(const Args & args);
int cmd_create(const Args & args);
int cmd_run(const Args & args);
int cmd_list(const Args & args);
int cmd_show(const Args & args);
int cmd_ps(const Args & args);
int cmd_stop(const Args & args);
int cmd_rm(const Args & args);
int cmd_cp(const Args & args);
int cmd_pull(const Args & args);

} // namespace specd::cli
