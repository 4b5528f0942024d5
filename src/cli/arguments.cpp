#include "cli/arguments.h"

#include "cli/commands.h"
#include "cli/terminal.h"

#include <CLI/CLI.hpp>

#include <cstdio>

namespace specd::cli {

namespace {

// The parsed options of every command; only the chosen command's are used.
struct Parsed {
    ServeOptions             serve;
    WorkerOptions            worker;
    CreateOptions            create;
    RunOptions               run;
    ShowOptions              show;
    TransferOptions          pull, push;
    std::string              stop;
    std::vector<std::string> rm;
    std::string              cp_source, cp_destination;
    std::string              help_topic;
    std::string              think;      // --think's value; "" when the flag is absent
    int                      runner_fd = -1;
    bool                     nowordwrap = false;
};

void add_commands(CLI::App & app, Parsed & p) {
    auto * serve = app.add_subcommand("serve", "Start the server (SPECD_HOST, default 127.0.0.1:11434)")->alias("start");
    serve->add_option("--host", p.serve.host, "Address to listen on (host, host:port, :port); overrides SPECD_HOST");
    serve->add_option("--models", p.serve.models, "Model store directory; overrides SPECD_MODELS");
    serve->add_flag("--no-draft", p.serve.no_draft, "Never draft (no speculative decoding); as SPECD_NO_DRAFT=1");
    serve->add_option("--parallel", p.serve.parallel,
                      "Sequences decoded together per model (0: from the memory budget); overrides SPECD_NUM_PARALLEL");
    serve->add_option("--rpc", p.serve.rpc,
                      "RPC workers (`specd worker`) to offload layers to, host:port,...; overrides SPECD_RPC. "
                      "Loopback only unless SPECD_RPC_ALLOW_REMOTE=1: the RPC protocol has no authentication");

    auto * worker = app.add_subcommand("worker", "Serve this machine's devices to a specd server's --rpc (ggml RPC)");
    worker->add_option("--host", p.worker.host, "Address to listen on; anything but loopback exposes an unauthenticated protocol")
        ->capture_default_str();
    worker->add_option("--port", p.worker.port, "Port to listen on")->capture_default_str()->check(CLI::Range(1, 65535));
    worker->add_option("-t,--threads", p.worker.threads, "CPU threads for the CPU device (0: half the cores)")
        ->capture_default_str()->check(CLI::Range(0, 1024));

    // Not a user command: the server starts one per loaded model (docs/process.md).
    auto * runner = app.add_subcommand("runner", "A model runner process, started by the server")->group("");
    runner->add_option("--fd", p.runner_fd, "The socket to the server")->required();

    auto * create = app.add_subcommand("create", "Create a model from a Modelfile");
    create->add_option("MODEL", p.create.name, "Name of the new model")->required();
    create->add_option("-f,--file", p.create.file, "Modelfile to read")->capture_default_str();
    create->add_option("-q,--quantize", p.create.quantize, "Quantize the model (e.g. q4_K_M, q8_0)");
    create->add_option("--draft-quantize", p.create.draft_quantize, "Quantize the DRAFT model too (e.g. q8_0)");

    auto * show = app.add_subcommand("show", "Show information for a model");
    show->add_option("MODEL", p.show.model, "Model to show")->required();
    show->add_flag("--license", p.show.license, "Show the license of a model");
    show->add_flag("--modelfile", p.show.modelfile, "Show the Modelfile of a model");
    show->add_flag("--parameters", p.show.parameters, "Show the parameters of a model");
    show->add_flag("--template", p.show.template_, "Show the template of a model");
    show->add_flag("--system", p.show.system, "Show the system message of a model");
    show->add_flag("-v,--verbose", p.show.verbose, "Show every metadata key");

    auto * run = app.add_subcommand("run", "Run a model: answer PROMPT, or chat interactively without one");
    run->add_option("MODEL", p.run.model, "Model to run (pulled first when missing)")->required();
    run->add_option("PROMPT", p.run.prompt, "Prompt (piped input comes before it)");
    run->add_flag("--verbose", p.run.verbose, "Show timings and speculation counters after each answer");
    run->add_option("--format", p.run.format, "Response format: json, or a JSON schema");
    run->add_flag("--think{true}", p.think, "Enable thinking; --think=false disables it, --think=low|medium|high sets the effort");
    run->add_flag("--hidethinking", p.run.hide_thinking, "Hide the thinking text (the model still thinks)");
    run->add_option("--keepalive", p.run.keep_alive, "How long the model stays loaded (e.g. 5m, 1h, -1 forever, 0)");
    run->add_flag("--nowordwrap", p.nowordwrap, "Don't wrap words to the next line automatically");
    run->add_flag("--insecure", p.run.insecure, "Use an insecure registry when pulling");
    run->add_option("--host", p.run.host, "Server to ask (host, host:port, :port); overrides SPECD_HOST");

    auto * stop = app.add_subcommand("stop", "Stop (unload) a running model");
    stop->add_option("MODEL", p.stop, "Model to stop")->required();

    auto * pull = app.add_subcommand("pull", "Pull a model from a registry (hf.co/USER/REPO:QUANT too)");
    pull->add_option("MODEL", p.pull.model, "Model to pull")->required();
    pull->add_flag("--insecure", p.pull.insecure, "Use an insecure registry");

    auto * push = app.add_subcommand("push", "Push a model to a registry");
    push->add_option("MODEL", p.push.model, "Model to push")->required();
    push->add_flag("--insecure", p.push.insecure, "Use an insecure registry");

    app.add_subcommand("list", "List models")->alias("ls");
    app.add_subcommand("ps", "List running models");

    auto * cp = app.add_subcommand("cp", "Copy a model");
    cp->add_option("SOURCE", p.cp_source, "Model to copy")->required();
    cp->add_option("DESTINATION", p.cp_destination, "Name of the copy")->required();

    auto * rm = app.add_subcommand("rm", "Remove models");
    rm->add_option("MODEL", p.rm, "Models to remove")->required();

    app.add_subcommand("version", "Show the version");
    auto * help = app.add_subcommand("help", "Help about any command");
    help->add_option("COMMAND", p.help_topic, "Command to explain");
}

// CLI11's parse errors as one line, in Ollama's words where it has them.
std::string parse_error_message(const CLI::ParseError & e) {
    std::string message = e.what();
    const std::string not_expected = "not expected: ";
    if (const size_t at = message.find(not_expected); at != std::string::npos) {
        std::string first = message.substr(at + not_expected.size());
        first             = first.substr(0, first.find(' '));
        return (first.rfind('-', 0) == 0 ? "unknown flag: " : "unexpected argument: ") + first;
    }
    return message;
}

// CLI11 shows a flag's default value in braces; --think's value is optional.
std::string help_text(CLI::App & app, const std::string & parents) {
    std::string text = app.help(parents);
    for (size_t at; (at = text.find("--think{true}")) != std::string::npos;) text.replace(at, 13, "--think[=VALUE]");
    return text;
}

// The subcommand that was named on the command line, if any.
CLI::App * chosen(CLI::App & app) {
    const auto subs = app.get_subcommands();
    return subs.empty() ? nullptr : subs.front();
}

int dispatch(CLI::App & app, const std::string & name, Parsed & p) {
    if (name == "serve") return cmd_serve(p.serve);
    if (name == "runner") return cmd_runner(p.runner_fd);
    if (name == "worker") return cmd_worker(p.worker);
    if (name == "create") return cmd_create(p.create);
    if (name == "show") return cmd_show(p.show);
    if (name == "run") {
        if (!p.think.empty()) p.run.think = p.think;
        p.run.word_wrap = !p.nowordwrap;
        return cmd_run(p.run);
    }
    if (name == "stop") return cmd_stop(p.stop);
    if (name == "pull") return cmd_pull(p.pull);
    if (name == "push") return cmd_push(p.push);
    if (name == "list") return cmd_list();
    if (name == "ps") return cmd_ps();
    if (name == "cp") return cmd_cp(p.cp_source, p.cp_destination);
    if (name == "rm") return cmd_rm(p.rm);
    if (name == "version") {
        std::printf("specd version %s\n", SPECD_VERSION);
        return 0;
    }
    if (name == "help") {
        if (p.help_topic.empty()) {
            app.clear(); // CLI11's help() shows the chosen subcommand's, here "help" itself
            std::fputs(help_text(app, "").c_str(), stdout);
            return 0;
        }
        for (CLI::App * sub : app.get_subcommands({})) {
            if (sub->check_name(p.help_topic)) {
                std::fputs(help_text(*sub, "specd").c_str(), stdout);
                return 0;
            }
        }
        return fail("unknown command \"" + p.help_topic + "\" for \"specd\"");
    }
    return fail("unknown command \"" + name + "\"");
}

} // namespace

int run_command_line(int argc, char ** argv) {
    CLI::App app{"specd: a local LLM server that speaks Ollama's API, with speculative decoding", "specd"};
    app.require_subcommand(0, 1);
    bool version = false;
    app.add_flag("-v,--version", version, "Show the version");
    Parsed p;
    add_commands(app, p);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        CLI::App * sub = chosen(app);
        std::fputs((sub ? help_text(*sub, "specd") : help_text(app, "")).c_str(), stdout);
        return 0;
    } catch (const CLI::ParseError & e) {
        return fail(parse_error_message(e));
    }
    if (version) {
        std::printf("specd version %s\n", SPECD_VERSION);
        return 0;
    }
    CLI::App * sub = chosen(app);
    if (!sub) {
        std::fputs(help_text(app, "").c_str(), stdout);
        return 0;
    }
    return dispatch(app, sub->get_name(), p);
}

} // namespace specd::cli
