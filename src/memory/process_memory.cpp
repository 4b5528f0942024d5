#include "memory/process_memory.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/types.h>
#include <unistd.h>

namespace specd::memory {

namespace {

size_t statm_resident(const char * path) {
    std::FILE * f = std::fopen(path, "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    const int     n    = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    const long page = sysconf(_SC_PAGE_SIZE);
    return n == 2 && page > 0 ? static_cast<size_t>(resident) * static_cast<size_t>(page) : 0;
}

// The parent pid in /proc/<pid>/stat: the field after the command, which is in parentheses
// and may itself hold spaces and parentheses (so the last ')' ends it).
pid_t parent_of(const std::string & pid) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string   line;
    if (!std::getline(in, line)) return -1;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) return -1;
    char  state  = 0;
    long  parent = -1;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &parent) != 2) return -1;
    return static_cast<pid_t>(parent);
}

} // namespace

size_t resident_bytes() { return statm_resident("/proc/self/statm"); }

size_t resident_bytes_with_children() {
    size_t          total = resident_bytes();
    const pid_t     self  = getpid();
    std::error_code ec;
    for (const auto & entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (parent_of(name) != self) continue;
        total += statm_resident(("/proc/" + name + "/statm").c_str());
    }
    return total;
}

} // namespace specd::memory
