#pragma once
// CPU threads for a session's contexts: persistent ggml thread pools (without one, every
// decode starts and joins its worker threads, which costs more than a small model's step),
// and the thread counts chosen by timing real decodes at each candidate count.
#include "engine/kv_sequence.h"
#include "engine/llama_handles.h"
#include "engine/thread_tuning.h"

#include <map>
#include <optional>
#include <span>
#include <vector>

namespace specd::engine {

// The CPUs this process may run on (its affinity mask), at least 1.
int32_t usable_cpus();

// One pool per thread count, shared by the contexts of one session: they decode one after
// another on the runner's thread, never at the same time. Must outlive the contexts it is
// attached to.
class ThreadPools {
  public:
    ggml_threadpool * get(int32_t n_threads);
    // Decodes of one token run on `n_threads`, larger batches on `n_threads_batch`.
    void attach(llama_context * ctx, int32_t n_threads, int32_t n_threads_batch);

  private:
    std::map<int32_t, threadpool_ptr> pools_;
};

// What a context decodes with, and what was measured to choose it.
struct ThreadChoice {
    int32_t                   n_threads       = 1; // one-token steps
    int32_t                   n_threads_batch = 1; // batches: verify rounds, prompt chunks
    std::vector<ThreadTiming> decode;               // empty: not measured (set by the user)
    std::vector<ThreadTiming> batch;
};

// One count for every step, not measured.
inline ThreadChoice fixed_threads(int32_t n) {
    ThreadChoice c;
    c.n_threads = c.n_threads_batch = n;
    return c;
}

// The measured one-token step at the chosen count (0 when not measured).
double chosen_step_s(const ThreadChoice & choice);

// Below this size a decode step is shorter than waking a second thread: one thread, unmeasured.
constexpr uint64_t k_unmeasured_model_bytes = 4ull << 20;

// Times decodes of `filler` tokens on `seq` (a sequence of `ctx`) at each of `candidates`
// (smallest first): a one-token step, and a batch of a verify round's size when the context
// takes one (else batches run on the one-token count). The tokens go after whatever the
// sequence holds and are removed again. The context is left on the chosen counts. nullopt
// when a decode failed (no room in the KV cache): nothing changed.
std::optional<ThreadChoice> calibrate_threads(llama_context * ctx, ThreadPools & pools, KvSequence & seq,
                                              llama_token filler, std::span<const int32_t> candidates);

// One line for the log: "2 threads (1: 4.10 ms, 2: 2.31 ms); batch 2 (...)".
std::string describe(const ThreadChoice & choice);

} // namespace specd::engine
