#pragma once
// A runner's child process, as the server holds it: the process id, the socket the two talk
// over, and the read end of the child's stderr. The child runs this same executable as
// `specd runner --fd 3`, in its own process group (a Ctrl-C at the terminal reaches the
// server, which then drains its runners, not the runners directly) and with no signal
// blocked (the server blocks SIGINT and SIGTERM for its watcher thread), and with no other
// descriptor of the server's than its stdin (/dev/null), stderr (a pipe) and fd 3.
#include <filesystem>
#include <optional>
#include <string>

#include <sys/types.h>

namespace specd::process {

// A file descriptor, closed when this object dies.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(Fd && other) noexcept : fd_(other.release()) {}
    Fd & operator=(Fd && other) noexcept {
        if (this != &other) {
            reset();
            fd_ = other.release();
        }
        return *this;
    }
    Fd(const Fd &)             = delete;
    Fd & operator=(const Fd &) = delete;

    int  get() const { return fd_; }
    int  release() {
        const int fd = fd_;
        fd_          = -1;
        return fd;
    }
    void reset();

  private:
    int fd_ = -1;
};

// How a child ended, in words for an error message ("killed by signal 6 (Aborted)").
std::string describe_exit(int wait_status);

class ChildProcess {
  public:
    // Starts `exe runner --fd 3`; throws std::runtime_error when it cannot.
    static ChildProcess spawn(const std::filesystem::path & exe);

    ChildProcess() = default;
    ~ChildProcess(); // a child still running is killed (SIGKILL) and reaped
    ChildProcess(ChildProcess && other) noexcept;
    ChildProcess & operator=(ChildProcess && other) noexcept;
    ChildProcess(const ChildProcess &)             = delete;
    ChildProcess & operator=(const ChildProcess &) = delete;

    pid_t pid() const { return pid_; }
    int   socket() const { return socket_.get(); }
    int   stderr_fd() const { return stderr_.get(); }

    // Waits up to `timeout_ms` for the child to exit (0: only looks); its wait status, or
    // nullopt while it runs. Once it returned a status the child is reaped.
    std::optional<int> wait(int timeout_ms);
    // SIGKILL, then reaps it; returns its wait status.
    int kill_and_wait();

  private:
    pid_t              pid_ = -1;
    Fd                 socket_;
    Fd                 stderr_;
    std::optional<int> status_;
};

// The path of the running executable (/proc/self/exe), for spawning runners of the same build.
std::filesystem::path own_executable();

} // namespace specd::process
