#pragma once
// What the operating system says this process holds, to set beside the ledger.
#include <cstddef>

namespace specd::memory {

// Resident set size in bytes (/proc/self/statm), 0 where unavailable.
size_t resident_bytes();
// The same for this process and its child processes together: the server and its model
// runners (docs/process.md), which hold the models' memory.
size_t resident_bytes_with_children();

} // namespace specd::memory
