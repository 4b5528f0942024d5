#include "engine/context_memory.h"

#include <gtest/gtest.h>

using specd::engine::DeviceBytes;
using specd::engine::parse_buffer_lines;
using specd::engine::parse_weight_lines;

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

// Layers offloaded to RPC workers: the totals count every device, `offloaded` names the part
// on each device that is not the host's (CPU, CPU_Mapped, CPU_REPACK, a GPU's pinned host
// buffer).
TEST(ContextMemory, OffloadedBuffersAreSplitByDevice) {
    const std::vector<std::string> lines = {
        "llama_kv_cache:        CPU KV buffer size =     2.00 MiB\n",
        "llama_kv_cache: RPC0[127.0.0.1:50052] KV buffer size =     4.00 MiB\n",
        "llama_kv_cache: RPC0[127.0.0.1:50053] KV buffer size =     6.00 MiB\n",
        "llama_context: RPC0[127.0.0.1:50052] compute buffer size =     1.00 MiB\n",
        "llama_context:  CUDA_Host compute buffer size =     0.50 MiB\n",
        "llama_context:        CPU  output buffer size =     0.25 MiB\n",
    };
    const auto b = parse_buffer_lines(lines);
    EXPECT_EQ(b.kv, 12u << 20);
    EXPECT_EQ(b.compute, (1u << 20) + (1u << 19) + (1u << 18));
    ASSERT_EQ(b.offloaded.size(), 2u);
    EXPECT_EQ(b.offloaded.at("RPC0[127.0.0.1:50052]"), (DeviceBytes{0, 4u << 20, 1u << 20}));
    EXPECT_EQ(b.offloaded.at("RPC0[127.0.0.1:50053]"), (DeviceBytes{0, 6u << 20, 0}));
}

TEST(ContextMemory, WeightLinesNameTheDevicesBesidesTheHost) {
    const std::vector<std::string> lines = {
        "load_tensors:   CPU_Mapped model buffer size =   800.00 MiB\n",
        "load_tensors:   CPU_REPACK model buffer size =    10.00 MiB\n",
        "load_tensors: RPC0[127.0.0.1:50052] model buffer size =    30.00 MiB\n",
        "load_tensors: RPC0[127.0.0.1:50053] model buffer size =    20.00 MiB\n",
        "llama_kv_cache: RPC0[127.0.0.1:50052] KV buffer size =     4.00 MiB\n", // not a weight
    };
    const auto w = parse_weight_lines(lines);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w.at("RPC0[127.0.0.1:50052]"), (DeviceBytes{30u << 20, 0, 0}));
    EXPECT_EQ(w.at("RPC0[127.0.0.1:50053]"), (DeviceBytes{20u << 20, 0, 0}));
    EXPECT_TRUE(parse_weight_lines({"load_tensors:          CPU model buffer size =   100.00 MiB\n"}).empty());
}
