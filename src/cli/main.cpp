// specd: every user-facing command is a subcommand of this one binary.
#include "cli/commands.h"
#include "memory/allocator.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

void usage() {
    std::fputs(
        "usage: specd <command> [args]\n"
        "\n"
        "commands:\n"
        "  serve                    start the server (SPECD_HOST, default 127.0.0.1:11434)\n"
        "  create NAME -f FILE [-q QUANTIZATION]\n"
        "                           create a model from a Modelfile (-q: quantize it, e.g. q4_K_M)\n"
        "  run MODEL [PROMPT]       answer PROMPT, or chat interactively without one\n"
        "  list                     list models\n"
        "  show MODEL [--modelfile|--parameters|--system|--template]\n"
        "  ps                       list loaded models\n"
        "  stop MODEL               unload a running model\n"
        "  rm MODEL...              remove models\n"
        "  cp SOURCE DESTINATION    copy a model\n"
        "  pull NAME [--insecure]   download a model from a registry (hf.co/USER/REPO:QUANT too)\n"
        "  version                  print the version\n",
        stderr);
}

} // namespace

int main(int argc, char ** argv) {
    specd::memory::configure_allocator(); // before anything allocates much (docs/memory.md)
    if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string              cmd = argv[1];
    const std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd == "serve") return specd::cli::cmd_serve(args);
    if (cmd == "create") return specd::cli::cmd_create(args);
    if (cmd == "run") return specd::cli::cmd_run(args);
    if (cmd == "list" || cmd == "ls") return specd::cli::cmd_list(args);
    if (cmd == "show") return specd::cli::cmd_show(args);
    if (cmd == "ps") return specd::cli::cmd_ps(args);
    if (cmd == "stop") return specd::cli::cmd_stop(args);
    if (cmd == "rm") return specd::cli::cmd_rm(args);
    if (cmd == "cp") return specd::cli::cmd_cp(args);
    if (cmd == "pull") return specd::cli::cmd_pull(args);
    if (cmd == "version" || cmd == "--version" || cmd == "-v") {
        std::printf("specd version %s\n", SPECD_VERSION);
        return 0;
    }
    std::fprintf(stderr, "specd: unknown command \"%s\"\n\n", cmd.c_str());
    usage();
    return 2;
}
