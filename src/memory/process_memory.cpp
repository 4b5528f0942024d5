#include "memory/process_memory.h"

#include <cstdio>
#include <unistd.h>

namespace specd::memory {

size_t resident_bytes() {
    std::FILE * f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    const int     n    = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    const long page = sysconf(_SC_PAGE_SIZE);
    return n == 2 && page > 0 ? static_cast<size_t>(resident) * static_cast<size_t>(page) : 0;
}

} // namespace specd::memory
