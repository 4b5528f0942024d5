#pragma once
// What the operating system says this process holds, to set beside the ledger.
#include <cstddef>

namespace specd::memory {

// Resident set size in bytes (/proc/self/statm), 0 where unavailable.
size_t resident_bytes();

} // namespace specd::memory
