#include "memory/allocator.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

using specd::memory::allocator_stats;
using specd::memory::AllocatorStats;
using specd::memory::configure_allocator;

namespace {

constexpr size_t MiB = size_t(1) << 20;

// The malloc this test process runs on: SPECD_TEST_ALLOCATOR where a test preloads one
// (tests/CMakeLists.txt), else the build's (glibc, or the sanitizer's).
std::string expected_allocator() {
    const char * preloaded = std::getenv("SPECD_TEST_ALLOCATOR");
    return preloaded ? preloaded : SPECD_ALLOCATOR_NAME;
}

} // namespace

TEST(Allocator, NamesTheMallocThisProcessRunsOn) {
    const AllocatorStats s = allocator_stats();
    EXPECT_EQ(s.name, expected_allocator());
    if (s.name != "sanitizer") EXPECT_FALSE(s.version.empty());
}

TEST(Allocator, ReportsTheCountsItsAllocatorKeeps) {
    const AllocatorStats s = allocator_stats();
    ASSERT_TRUE(s.allocated && s.mapped && s.free);
    EXPECT_GT(*s.allocated, 0u);
    EXPECT_GE(*s.mapped, *s.allocated); // every allocation sits in mapped memory
    if (s.name == "jemalloc") {
        ASSERT_TRUE(s.active && s.resident && s.retained && s.metadata);
        EXPECT_GE(*s.active, *s.allocated); // pages hold at least what lives in them
        EXPECT_GE(*s.mapped, *s.active);
        EXPECT_GT(*s.resident, 0u);
        EXPECT_FALSE(s.releasable || s.mmap_threshold);
    } else if (s.name == "glibc") {
        EXPECT_TRUE(s.releasable.has_value());
        EXPECT_FALSE(s.resident || s.retained); // glibc cannot tell
    }
}

TEST(Allocator, AllocatedFollowsALargeBufferInAndOut) {
    const size_t before = *allocator_stats().allocated;
    size_t       during = 0;
    {
        std::vector<char> buffer(32 * MiB, 1);
        during = *allocator_stats().allocated;
        EXPECT_EQ(buffer[12345], 1); // the buffer lives until after the reading
    }
    const size_t after = *allocator_stats().allocated;
    EXPECT_GE(during, before + 31 * MiB);
    EXPECT_LE(after + 16 * MiB, during);
}

// glibc left to itself raises its mmap threshold to the largest block freed (up to 32 MiB)
// and serves the next 1 MiB buffer from a heap, where freeing it leaves a resident hole; set
// up by configure_allocator, every buffer from 128 KiB up has its own mapping, gone when freed.
TEST(Allocator, GlibcGivesLargeBuffersTheirOwnMappingEvenAfterLargerOnesWereFreed) {
    configure_allocator();
    const AllocatorStats s = allocator_stats();
    if (s.name != "glibc") GTEST_SKIP() << "configure_allocator tunes glibc only; this is " << s.name;
    ASSERT_EQ(s.mmap_threshold, 128 * 1024u);
    { std::vector<char> larger(8 * MiB, 1); EXPECT_EQ(larger[1], 1); }
    const size_t mapped = *allocator_stats().mapped;
    const size_t free   = *allocator_stats().free;
    {
        std::vector<char> buffer(MiB, 1);
        EXPECT_GE(*allocator_stats().mapped, mapped + MiB); // a mapping of its own
        EXPECT_EQ(buffer[1], 1);
    }
    EXPECT_LT(*allocator_stats().free, free + MiB / 2); // and no hole left behind
}
