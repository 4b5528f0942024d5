#include "engine/rpc_workers.h"

#include "core/settings.h"
#include "engine/backend.h"

#include <ggml-rpc.h>
#include <ggml.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>

namespace specd::engine {

namespace {

struct MemoryAnswer {
    uint64_t free  = 0;
    uint64_t total = 0;
};

// In a child: an abort inside ggml's RPC client (worker down, wrong protocol) ends the child
// quietly instead of printing a backtrace.
void quiet_abort(const char *) { _exit(3); }

// Asks the worker for its first device's memory in a forked child, so ggml's abort on a
// failed connection ends the child only. The child uses only ggml's client and _exit.
bool ask_memory(const RpcEndpoint & endpoint, std::chrono::milliseconds timeout, MemoryAnswer & out) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    const std::string text = endpoint.text();
    const pid_t       pid  = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        ggml_set_abort_callback(quiet_abort);
        MemoryAnswer a;
        size_t       free = 0, total = 0;
        ggml_backend_rpc_get_device_memory(text.c_str(), 0, &free, &total);
        a.free  = free;
        a.total = total;
        const bool ok = write(fds[1], &a, sizeof a) == static_cast<ssize_t>(sizeof a);
        _exit(ok ? 0 : 4);
    }
    close(fds[1]);
    pollfd p{fds[0], POLLIN, 0};
    int    ready = 0;
    do {
        ready = poll(&p, 1, static_cast<int>(timeout.count()));
    } while (ready < 0 && errno == EINTR);
    bool got = false;
    if (ready > 0) got = read(fds[0], &out, sizeof out) == static_cast<ssize_t>(sizeof out);
    close(fds[0]);
    if (!got) kill(pid, SIGKILL); // a busy worker keeps the child waiting for its handshake
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

std::vector<RpcWorker> probe_rpc_workers(const std::vector<RpcEndpoint> & endpoints, std::chrono::milliseconds timeout) {
    ensure_backend();
    std::vector<RpcWorker> out;
    for (const RpcEndpoint & e : endpoints) {
        MemoryAnswer a;
        if (ask_memory(e, timeout, a)) {
            out.push_back({e, a.free, a.total});
        } else {
            std::fprintf(stderr, "specd: RPC worker %s did not answer within %lld ms (down, or serving another client): "
                                 "loading without it\n",
                         e.text().c_str(), static_cast<long long>(timeout.count()));
        }
    }
    return out;
}

std::vector<ggml_backend_dev_t> rpc_devices(const std::vector<RpcWorker> & workers) {
    std::vector<ggml_backend_dev_t> devices;
    for (const RpcWorker & w : workers) {
        ggml_backend_reg_t reg = ggml_backend_rpc_add_server(w.endpoint.text().c_str());
        if (!reg) continue; // the worker serves no device
        for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) devices.push_back(ggml_backend_reg_dev_get(reg, i));
    }
    return devices;
}

std::vector<RpcEndpoint> configured_rpc_endpoints() {
    const auto list = setting("RPC");
    if (!list) return {};
    const auto remote = setting("RPC_ALLOW_REMOTE");
    return parse_rpc_endpoints(*list, remote && *remote != "0" && *remote != "false");
}

void serve_rpc_worker(const RpcEndpoint & endpoint, int n_threads) {
    ensure_backend();
    // As llama.cpp's rpc-server: the accelerators if there are any, else the CPU.
    std::vector<ggml_backend_dev_t> devices;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) devices.push_back(dev);
    }
    if (devices.empty()) {
        if (ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) devices.push_back(cpu);
    }
    if (devices.empty()) throw std::runtime_error("no device to serve");
    // Returns only when it could not start (ggml prints why); it serves until killed otherwise.
    ggml_backend_rpc_start_server(endpoint.text().c_str(), nullptr, static_cast<size_t>(n_threads), devices.size(),
                                  devices.data());
    throw std::runtime_error("could not serve on " + endpoint.text() + " (is the port taken?)");
}

} // namespace specd::engine
