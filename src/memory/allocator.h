#pragma once
// The process's malloc: how specd sets it up, and what it says about the memory it manages,
// to set beside the ledger and the resident memory. When RSS grows while the ledger stays
// flat, these numbers say whether the program holds more (allocated grows) or the allocator
// keeps more than the program uses (free or mapped grow while allocated does not):
// fragmentation, not a leak.
//
// Which allocator: glibc's malloc, unless jemalloc is preloaded (LD_PRELOAD, found at run
// time) or a sanitizer (ASan, TSan) brings its own.
#include <cstddef>
#include <optional>
#include <string>

namespace specd::memory {

// Every count in bytes; nullopt where this allocator does not report it.
struct AllocatorStats {
    std::string name;    // "glibc", "jemalloc" or "sanitizer"
    std::string version; // the allocator's own version string ("" for a sanitizer)
    // Live allocations: what the program asked for and has not freed yet.
    std::optional<size_t> allocated;
    // jemalloc: pages that hold live allocations (allocated plus the rounding of size classes).
    std::optional<size_t> active;
    // Held free for reuse, not returned to the system. glibc: free chunks inside its heaps,
    // resident once touched; jemalloc: dirty and muzzy pages of freed allocations, returned
    // after a decay time; sanitizer: its free lists.
    std::optional<size_t> free;
    // jemalloc: its pages counted as resident (an upper bound: it cannot tell pages never
    // touched, and llama.cpp reserves compute buffers it touches only in part).
    std::optional<size_t> resident;
    // Address space mapped for allocations. glibc: its heaps (the main one and one per thread
    // that contended for it) plus the chunks it served with their own mmap; jemalloc: extents
    // in use by its arenas; sanitizer: its heap.
    std::optional<size_t> mapped;
    // jemalloc: address space kept after its pages were given back (virtual, not resident).
    std::optional<size_t> retained;
    // jemalloc: its own bookkeeping.
    std::optional<size_t> metadata;
    // glibc: free bytes at the top of the main heap that malloc_trim could return.
    std::optional<size_t> releasable;
    // glibc: allocations from this size up get their own mmap (set by configure_allocator).
    std::optional<size_t> mmap_threshold;
};

// glibc: allocations of 128 KiB or more get their own mmap, unmapped when freed. Left to
// itself glibc raises that threshold to the largest block freed so far (up to 32 MiB) and
// serves everything below it from heaps that fragment when buffer sizes change with every
// request (images of many sizes; the compute graph llama.cpp re-reserves around each
// image): resident memory then keeps growing (docs/memory.md has the measurements). An
// explicit setting in the environment (MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES) is kept.
// Nothing to do for jemalloc or a sanitizer. Called once, first thing in main().
void configure_allocator();

// A fresh reading (jemalloc's statistics are refreshed first). Cheap enough for a scrape:
// glibc walks its free lists under each arena's lock.
AllocatorStats allocator_stats();

} // namespace specd::memory
