#include "cli/interrupt.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <stdexcept>

namespace specd::cli {

namespace {

std::atomic<bool> g_pending{false};
int               g_pipe[2] = {-1, -1};
struct sigaction  g_previous {};

void on_sigint(int) {
    g_pending.store(true);
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_pipe[1], &byte, 1); // async-signal-safe wake-up
}

} // namespace

InterruptGuard::InterruptGuard() {
    if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("cannot create a pipe for Ctrl+C");
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; // no SA_RESTART: a blocked read returns, so the flag is seen
    sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() {
    sigaction(SIGINT, &g_previous, nullptr);
    ::close(g_pipe[0]);
    ::close(g_pipe[1]);
    g_pipe[0] = g_pipe[1] = -1;
    g_pending.store(false);
}

bool take_interrupt() {
    char buf[64];
    while (g_pipe[0] >= 0 && ::read(g_pipe[0], buf, sizeof buf) > 0) {}
    return g_pending.exchange(false);
}

bool interrupt_pending() { return g_pending.load(); }

int interrupt_fd() { return g_pipe[0]; }

} // namespace specd::cli
