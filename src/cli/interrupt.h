#pragma once
// Ctrl+C in the interactive mode: it stops an answer or clears the line being typed, as in
// Ollama, instead of ending the process. While an InterruptGuard lives, SIGINT only sets a
// flag (and wakes a poll on interrupt_fd()).
namespace specd::cli {

class InterruptGuard {
  public:
    InterruptGuard();
    ~InterruptGuard(); // the previous SIGINT handling comes back
    InterruptGuard(const InterruptGuard &)             = delete;
    InterruptGuard & operator=(const InterruptGuard &) = delete;
};

// True once per Ctrl+C (the flag is cleared by reading it).
bool take_interrupt();
// True while a Ctrl+C is pending (the flag stays set).
bool interrupt_pending();
// Readable after a Ctrl+C until take_interrupt(); -1 without a guard.
int interrupt_fd();

} // namespace specd::cli
