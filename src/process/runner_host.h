#pragma once
// The runner process's side (`specd runner --fd N`): one scheduler::Runner, served to the
// server over the socket `fd` until the server says stop or goes away. The runner is the
// same as a thread of the server would run; only its jobs come in as frames and its events,
// its state (what /api/ps shows, its ledger, prompt cache and metrics) and its requests for
// memory go out as frames.
namespace specd::process {

// Returns the process's exit code: 0 after a stop or the server's end of stream, 2 when the
// server speaks another protocol version.
int serve_runner(int fd);

} // namespace specd::process
