#include "process/child_process.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char ** environ;

namespace specd::process {

void Fd::reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

std::string describe_exit(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char * name = strsignal(sig);
        return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
    }
    return "ended (wait status " + std::to_string(status) + ")";
}

namespace {

[[noreturn]] void fail(const std::string & what, int err) {
    throw std::runtime_error("cannot start a model runner: " + what + ": " + std::strerror(err));
}

// posix_spawn's attributes and file actions, destroyed with the scope.
struct SpawnSetup {
    posix_spawnattr_t          attr;
    posix_spawn_file_actions_t actions;
    SpawnSetup() {
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup &)             = delete;
    SpawnSetup & operator=(const SpawnSetup &) = delete;
};

} // namespace

ChildProcess ChildProcess::spawn(const std::filesystem::path & exe) {
    int pair[2];
    // Close-on-exec on both ends: only the duplicate the child gets as fd 3 survives its exec.
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) fail("socketpair", errno);
    Fd parent_end(pair[0]), child_end(pair[1]);
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) fail("pipe", errno);
    Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

    SpawnSetup s;
    sigset_t   none;
    sigemptyset(&none);
    sigset_t defaults; // SIGPIPE stays ignored: a server gone is an EPIPE to the runner
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&s.attr, &none);
    posix_spawnattr_setsigdefault(&s.attr, &defaults);
    posix_spawnattr_setpgroup(&s.attr, 0);
    posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    posix_spawn_file_actions_adddup2(&s.actions, child_end.get(), 3);
    posix_spawn_file_actions_adddup2(&s.actions, err_write.get(), STDERR_FILENO);
    posix_spawn_file_actions_addopen(&s.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    // Nothing else of the server's goes along: a client's connection (Boost.Asio opens its
    // sockets without close-on-exec) held open by a runner would never see its end when the
    // server closes it.
    posix_spawn_file_actions_addclosefrom_np(&s.actions, 4);

    const std::string        path = exe.string();
    std::vector<std::string> args = {path, "runner", "--fd", "3"};
    std::vector<char *>      argv;
    for (auto & a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (const int rc = ::posix_spawn(&pid, path.c_str(), &s.actions, &s.attr, argv.data(), environ); rc != 0) {
        fail(path, rc);
    }
    ChildProcess c;
    c.pid_    = pid;
    c.socket_ = std::move(parent_end);
    c.stderr_ = std::move(err_read);
    return c; // the child's ends close here, so the parent sees EOF when the child is gone
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !status_) kill_and_wait();
}

ChildProcess::ChildProcess(ChildProcess && other) noexcept :
    pid_(other.pid_), socket_(std::move(other.socket_)), stderr_(std::move(other.stderr_)), status_(other.status_) {
    other.pid_ = -1;
}

ChildProcess & ChildProcess::operator=(ChildProcess && other) noexcept {
    if (this != &other) {
        if (pid_ > 0 && !status_) kill_and_wait();
        pid_     = other.pid_;
        socket_  = std::move(other.socket_);
        stderr_  = std::move(other.stderr_);
        status_  = other.status_;
        other.pid_ = -1;
    }
    return *this;
}

std::optional<int> ChildProcess::wait(int timeout_ms) {
    if (status_ || pid_ <= 0) return status_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        int         status = 0;
        const pid_t r      = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            status_ = status;
            return status_;
        }
        if (r < 0 && errno != EINTR) { // not our child any more (reaped elsewhere)
            status_ = 0;
            return status_;
        }
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

int ChildProcess::kill_and_wait() {
    if (status_) return *status_;
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    for (;;) {
        if (auto s = wait(1000)) return *s;
    }
}

std::filesystem::path own_executable() {
    std::error_code ec;
    auto            p = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("cannot find this executable (/proc/self/exe): " + ec.message());
    return p;
}

} // namespace specd::process
