#pragma once
// The CLI subcommands, each with its options as parsed by cli/arguments.cpp. Each returns
// the process exit code (errors: one line on stderr, exit 1).
#include <optional>
#include <string>
#include <vector>

namespace specd::cli {

struct ServeOptions {
    std::optional<std::string> host;     // --host, else SPECD_HOST
    std::optional<std::string> models;   // --models, else SPECD_MODELS
    std::optional<std::string> parallel; // --parallel, else SPECD_NUM_PARALLEL
    std::optional<std::string> rpc;      // --rpc, else SPECD_RPC
    bool                       no_draft = false;
};

struct WorkerOptions {
    std::string host    = "127.0.0.1";
    int         port    = 50052; // llama.cpp's rpc-server's
    int         threads = 0;     // 0: half the cores, as rpc-server
};

struct CreateOptions {
    std::string name;
    std::string file = "Modelfile";
    std::string quantize;       // -q: quantize the model (q4_K_M, q8_0, ...)
    std::string draft_quantize; // quantize the DRAFT model too
};

struct RunOptions {
    std::string                model;
    std::vector<std::string>   prompt; // words, joined with spaces
    bool                       verbose = false;
    std::string                format; // "", "json" or a JSON schema
    std::optional<std::string> think;  // "true", "false", "low", "medium", "high"
    bool                       hide_thinking = false;
    std::optional<std::string> keep_alive;
    bool                       word_wrap = true;
    bool                       insecure  = false; // for the pull of a missing model
    std::optional<std::string> host; // the server to ask (host, host:port, :port); else SPECD_HOST
};

struct ShowOptions {
    std::string model;
    bool        license    = false;
    bool        modelfile  = false;
    bool        parameters = false;
    bool        template_  = false;
    bool        system     = false;
    bool        verbose    = false;
};

struct TransferOptions { // pull and push
    std::string model;
    bool        insecure = false;
};

int cmd_serve(const ServeOptions & o);
int cmd_runner(int fd); // the server's model runner process (not a user command)
int cmd_worker(const WorkerOptions & o);
int cmd_create(const CreateOptions & o);
int cmd_run(const RunOptions & o);
int cmd_list();
int cmd_show(const ShowOptions & o);
int cmd_ps();
int cmd_stop(const std::string & model);
int cmd_rm(const std::vector<std::string> & models);
int cmd_cp(const std::string & source, const std::string & destination);
int cmd_pull(const TransferOptions & o);
int cmd_push(const TransferOptions & o);

} // namespace specd::cli
