// `specd worker`: this machine's devices served over ggml's RPC protocol, for a server
// started with `--rpc` (llama.cpp's rpc-server, from the same pinned tree).
#include "cli/commands.h"
#include "cli/terminal.h"
#include "core/rpc_endpoints.h"
#include "engine/rpc_workers.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <thread>

namespace specd::cli {

int cmd_worker(const WorkerOptions & o) {
    RpcEndpoint endpoint;
    try {
        // The same checks a server applies to its --rpc list, less the loopback rule: a user
        // may bind elsewhere, and is told what that means.
        endpoint = parse_rpc_endpoints(o.host + ":" + std::to_string(o.port), /*allow_remote=*/true).front();
    } catch (const std::exception & e) {
        fail(e.what());
        return 2;
    }
    if (!is_loopback_host(endpoint.host)) {
        std::fprintf(stderr, "specd worker: WARNING: listening on %s. The RPC protocol has no authentication and no "
                             "encryption: anyone who can reach this port can run computations and read memory here. "
                             "Use it only on a network you trust.\n",
                     endpoint.host.c_str());
    }
    const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency() / 2));
    try {
        engine::serve_rpc_worker(endpoint, threads);
    } catch (const std::exception & e) {
        return fail(e.what());
    }
    return 0;
}

} // namespace specd::cli
