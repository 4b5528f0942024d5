#include "memory/allocator.h"

// GCC names the sanitizers with macros, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPECD_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPECD_SANITIZER_MALLOC 1
#endif
#endif

#if defined(SPECD_SANITIZER_MALLOC)
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else
// GCC does not ship clang's allocator_interface.h; its ASan and TSan runtimes export the same
// functions.
#include <cstddef>
extern "C" {
size_t __sanitizer_get_current_allocated_bytes();
size_t __sanitizer_get_heap_size();
size_t __sanitizer_get_free_bytes();
}
#endif
#else
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace specd::memory {

#if defined(SPECD_SANITIZER_MALLOC)

void configure_allocator() {}

AllocatorStats allocator_stats() {
    AllocatorStats s;
    s.name      = "sanitizer";
    s.allocated = __sanitizer_get_current_allocated_bytes();
    s.free      = __sanitizer_get_free_bytes();
    s.mapped    = __sanitizer_get_heap_size();
    return s;
}

#else

namespace {

constexpr size_t k_mmap_threshold = 128 * 1024;

std::atomic<size_t> g_mmap_threshold{0}; // what configure_allocator set; 0: nothing

// jemalloc's control interface, when a preloaded jemalloc is the process's malloc.
using mallctl_fn = int (*)(const char *, void *, size_t *, void *, size_t);

mallctl_fn jemalloc_mallctl() {
    static const mallctl_fn fn = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
    return fn;
}

template <typename T> std::optional<T> read(mallctl_fn mallctl, const char * name) {
    T      value{};
    size_t len = sizeof(value);
    if (mallctl(name, &value, &len, nullptr, 0) != 0) return std::nullopt;
    return value;
}

AllocatorStats jemalloc_stats(mallctl_fn mallctl) {
    AllocatorStats s;
    s.name = "jemalloc";
    if (auto v = read<const char *>(mallctl, "version")) s.version = *v;
    // Statistics are a snapshot taken when the epoch advances.
    uint64_t epoch = 1;
    mallctl("epoch", nullptr, nullptr, &epoch, sizeof(epoch));
    s.allocated = read<size_t>(mallctl, "stats.allocated");
    s.active    = read<size_t>(mallctl, "stats.active");
    s.resident  = read<size_t>(mallctl, "stats.resident");
    s.mapped    = read<size_t>(mallctl, "stats.mapped");
    s.retained  = read<size_t>(mallctl, "stats.retained");
    s.metadata  = read<size_t>(mallctl, "stats.metadata");
    // Dirty and muzzy pages of all arenas merged (4096 = MALLCTL_ARENAS_ALL), in pages.
    const auto page  = read<size_t>(mallctl, "arenas.page");
    const auto dirty = read<size_t>(mallctl, "stats.arenas.4096.pdirty");
    const auto muzzy = read<size_t>(mallctl, "stats.arenas.4096.pmuzzy");
    if (page && dirty && muzzy) s.free = (*dirty + *muzzy) * *page;
    return s;
}

bool threshold_set_by_environment() {
    if (std::getenv("MALLOC_MMAP_THRESHOLD_")) return true;
    const char * tunables = std::getenv("GLIBC_TUNABLES");
    return tunables && std::strstr(tunables, "glibc.malloc.mmap_threshold");
}

} // namespace

void configure_allocator() {
    if (jemalloc_mallctl() || threshold_set_by_environment()) return;
    // Setting it also stops glibc's dynamic adjustment of this threshold and of the trim one.
    if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(k_mmap_threshold)) == 1) g_mmap_threshold = k_mmap_threshold;
}

AllocatorStats allocator_stats() {
    if (const mallctl_fn mallctl = jemalloc_mallctl()) return jemalloc_stats(mallctl);
    AllocatorStats s;
    s.name    = "glibc";
    s.version = gnu_get_libc_version();
    // Sums over every arena.
    const struct mallinfo2 m = mallinfo2();
    s.allocated  = m.uordblks + m.hblkhd;
    s.free       = m.fordblks;
    s.mapped     = m.arena + m.hblkhd;
    s.releasable = m.keepcost;
    if (const size_t t = g_mmap_threshold.load()) s.mmap_threshold = t;
    return s;
}

#endif

} // namespace specd::memory
