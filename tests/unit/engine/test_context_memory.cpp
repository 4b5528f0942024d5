#include "engine/context_memory.h"

#include <gtest/gtest.h>

using specd::engine::parse_buffer_lines;

TEST(ContextMemory, BufferLinesAreSummedByKind) {
    const std::vector<std::string> lines = {
        "llama_kv_cache:        CPU KV buffer size =    12.00 MiB\n",
        "llama_kv_cache:        CPU KV buffer size =     0.50 MiB\n", // a second cache (SWA)
        "llama_memory_recurrent:        CPU RS buffer size =     1.00 MiB\n",
        "llama_context:        CPU  output buffer size =     0.25 MiB\n",
        "llama_context:        CPU compute buffer size =     3.00 MiB\n",
        "load_tensors:   CPU_Mapped model buffer size =   800.00 MiB\n", // weights: not ours
        "llama_context: CPU compute buffer size is   3.0000 MiB, matches expectation of 3.0000 MiB\n",
        "garbage buffer size = lots MiB\n",
    };
    const auto b = parse_buffer_lines(lines);
    EXPECT_EQ(b.kv, (12u << 20) + (1u << 19) + (1u << 20));
    EXPECT_EQ(b.compute, (3u << 20) + (1u << 18));
}

TEST(ContextMemory, NoLinesNoBytes) {
    const auto b = parse_buffer_lines({});
    EXPECT_EQ(b.kv, 0u);
    EXPECT_EQ(b.compute, 0u);
}
