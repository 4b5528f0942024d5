#pragma once
// ggml's RPC backend from both ends: a worker that serves this machine's devices to a server
// (`specd worker`), and, on the server's side, the workers a model's layers can go to.
//
// ggml's RPC client aborts the process when a worker cannot be reached, refuses the handshake
// or goes away mid-graph. Loads run in runner processes (docs/process.md), so such an abort
// ends one runner; before a load, each worker is asked for its memory from a child process
// first, so a worker that is down, or busy with another client (a worker serves one client
// connection at a time), is left out of that load instead of ending it.
#include "core/rpc_endpoints.h"

#include <ggml-backend.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace specd::engine {

struct RpcWorker {
    RpcEndpoint endpoint;
    uint64_t    free_bytes  = 0; // what the worker's first device reports
    uint64_t    total_bytes = 0;
};

// The workers that answered within `timeout`, in the order given.
std::vector<RpcWorker> probe_rpc_workers(const std::vector<RpcEndpoint> & endpoints, std::chrono::milliseconds timeout);

// The devices of these workers (every device each one serves), registered with ggml in this
// process; they stay registered for the process's life, as ggml keeps them.
std::vector<ggml_backend_dev_t> rpc_devices(const std::vector<RpcWorker> & workers);

// SPECD_RPC as `specd serve` checked it (empty: no workers). `specd serve --rpc` sets it, so
// the runner processes it starts read the same list.
std::vector<RpcEndpoint> configured_rpc_endpoints();

// Serves this machine's accelerators (or, without one, its CPU) to RPC clients on `endpoint`
// with `n_threads` CPU threads, until the process ends. Throws std::runtime_error when it
// cannot start (no device, the address is taken).
void serve_rpc_worker(const RpcEndpoint & endpoint, int n_threads);

} // namespace specd::engine
