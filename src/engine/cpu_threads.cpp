#include "engine/cpu_threads.h"

#include <ggml-cpu.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sched.h>
#include <thread>

namespace specd::engine {

namespace {

// The batch timed for n_threads_batch: about a verify round (last token + drafts).
constexpr int32_t k_batch_tokens = 8;
// Timed repetitions per count: as many as fit this budget after a warm-up step, within
// bounds; a warm-up step longer than the budget is the only sample (a large model, or a count
// that oversubscribes a busy machine: timing it again would stall every request).
constexpr double k_budget_s = 0.04;
constexpr int    k_reps_min = 3;
constexpr int    k_reps_max = 9;
// A model whose one-token step is slower than this is not timed on batches too: its batches
// use the decode count (both are bound by reading the weights).
constexpr double k_batch_skip_s = 0.05;
// Batches are timed only on the counts whose one-token step was within this factor of the
// best: a count that far behind oversubscribes the machine (spinning barriers), and a batch
// on it could stall for seconds. Wide, because a one-token step is bound by memory while a
// batch is bound by compute: more threads can tie on the first and halve the second.
constexpr double k_batch_near = 3.0;
// The fastest two counts are timed again in turn, at least this many steps each (as many as
// fit k_confirm_budget_s, at most k_reps_max): the choice between them often rests on a
// difference of 10-20%, which one step on a shared virtual CPU cannot tell from noise.
constexpr int    k_confirm_min      = 3;
constexpr double k_confirm_budget_s = 0.25;

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Median seconds of one decode of `n_tokens` at `n_threads`, or nullopt when a decode failed.
// `steps` > 0: exactly that many timed steps, no warm-up (the pool is warm already).
std::optional<double> time_decode(llama_context * ctx, ThreadPools & pools, Batch & batch, int32_t n_threads,
                                  int32_t n_tokens, KvSequence & seq, llama_token filler, int steps = 0) {
    pools.attach(ctx, n_threads, n_threads);
    std::vector<double> samples;
    int                 reps = steps > 0 ? steps : 1; // else the warm-up step decides how many follow
    for (int r = steps > 0 ? 1 : 0; r <= reps; ++r) {
        batch.clear();
        for (int32_t i = 0; i < n_tokens; ++i) batch.add(filler, seq.next_pos() + i, seq.id(), i + 1 == n_tokens);
        const auto    t0 = std::chrono::steady_clock::now();
        const int32_t rc = llama_decode(ctx, batch.get());
        const double  dt = seconds_since(t0);
        // The timed cells are not part of the sequence: dropped again.
        if (!seq.keep(seq.size()) || rc != 0) return std::nullopt;
        if (r > 0) samples.push_back(dt);
        else if (dt > k_budget_s) return dt;
        else reps = std::clamp(int(k_budget_s / std::max(dt, 1e-6)), k_reps_min, k_reps_max);
    }
    return median(std::move(samples));
}

// Times `candidates` in order (smallest first), stopping once more threads are clearly slower.
std::optional<std::vector<ThreadTiming>> time_counts(llama_context * ctx, ThreadPools & pools, Batch & batch,
                                                     std::span<const int32_t> candidates, int32_t n_tokens,
                                                     KvSequence & seq, llama_token filler) {
    std::vector<ThreadTiming> out;
    for (int32_t n : candidates) {
        const auto t = time_decode(ctx, pools, batch, n, n_tokens, seq, filler);
        if (!t) return std::nullopt;
        out.push_back({n, *t});
        if (!worth_going_on(out)) break;
    }
    return out;
}

// Times the fastest count and the runner-up once more, one step of each in turn, and
// replaces their timings with these: a burst of noise (another process, a virtual CPU the host
// took away for a while) then falls on both instead of on whichever was being timed, which
// could make a count that is twice as fast look ten times slower. At least k_confirm_min
// steps each when the two are close; more as the budget allows.
bool confirm_in_turn(llama_context * ctx, ThreadPools & pools, Batch & batch, std::vector<ThreadTiming> & timings,
                     int32_t n_tokens, KvSequence & seq, llama_token filler) {
    if (timings.size() < 2) return true;
    std::vector<size_t> order(timings.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return timings[a].step_s < timings[b].step_s; });
    ThreadTiming & first  = timings[order[0]];
    ThreadTiming & second = timings[order[1]];
    // A runner-up twice as slow is timed once more only: a burst of noise is undone by one
    // step, while a count that oversubscribes a busy machine would stall on every step.
    const int      min_reps = second.step_s > 2.0 * first.step_s ? 1 : k_confirm_min;
    const int      reps   = std::clamp(int(k_confirm_budget_s / std::max(first.step_s + second.step_s, 1e-6)),
                                        min_reps, k_reps_max);
    std::vector<double> a, b;
    for (int r = 0; r < reps; ++r) {
        for (ThreadTiming * t : {&first, &second}) {
            const auto dt = time_decode(ctx, pools, batch, t->n_threads, n_tokens, seq, filler, 1);
            if (!dt) return false;
            (t == &first ? a : b).push_back(*dt);
        }
    }
    first.step_s  = median(std::move(a));
    second.step_s = median(std::move(b));
    return true;
}

std::string timings_text(const std::vector<ThreadTiming> & timings) {
    std::string s;
    for (const ThreadTiming & t : timings) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "%s%d: %.2f ms", s.empty() ? "" : ", ", t.n_threads, t.step_s * 1e3);
        s += buf;
    }
    return s;
}

} // namespace

int32_t usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

ggml_threadpool * ThreadPools::get(int32_t n_threads) {
    n_threads        = std::max(1, n_threads);
    threadpool_ptr & pool = pools_[n_threads];
    if (!pool) {
        ggml_threadpool_params params = ggml_threadpool_params_default(n_threads);
        pool.reset(ggml_threadpool_new(&params));
    }
    return pool.get();
}

void ThreadPools::attach(llama_context * ctx, int32_t n_threads, int32_t n_threads_batch) {
    llama_attach_threadpool(ctx, get(n_threads), get(n_threads_batch));
    llama_set_n_threads(ctx, n_threads, n_threads_batch);
}

std::optional<ThreadChoice> calibrate_threads(llama_context * ctx, ThreadPools & pools, KvSequence & seq,
                                              llama_token filler, std::span<const int32_t> candidates) {
    const int32_t prev_threads = llama_n_threads(ctx), prev_batch = llama_n_threads_batch(ctx);
    Batch         batch(k_batch_tokens, 1);
    ThreadChoice  choice;
    auto decode = time_counts(ctx, pools, batch, candidates, 1, seq, filler);
    if (!decode) {
        pools.attach(ctx, prev_threads, prev_batch);
        return std::nullopt;
    }
    choice.decode = std::move(*decode);
    if (!confirm_in_turn(ctx, pools, batch, choice.decode, 1, seq, filler)) {
        pools.attach(ctx, prev_threads, prev_batch);
        return std::nullopt;
    }
    choice.n_threads = fastest_threads(choice.decode);
    double best_step = choice.decode.front().step_s;
    for (const ThreadTiming & t : choice.decode) best_step = std::min(best_step, t.step_s);
    choice.n_threads_batch = choice.n_threads;
    // llama.cpp caps a context's batch at its n_ctx and aborts on a larger one: a context
    // smaller than a verify batch (num_ctx below 8) never decodes one, so it is not timed.
    const bool fits_batch = llama_n_batch(ctx) >= uint32_t(k_batch_tokens);
    if (best_step < k_batch_skip_s && fits_batch) {
        // Batches are timed on the counts whose one-token step was within reach of the best.
        std::vector<int32_t> near;
        for (const ThreadTiming & t : choice.decode) {
            if (t.step_s <= k_batch_near * best_step) near.push_back(t.n_threads);
        }
        auto timed = time_counts(ctx, pools, batch, near, k_batch_tokens, seq, filler);
        if (timed && confirm_in_turn(ctx, pools, batch, *timed, k_batch_tokens, seq, filler)) {
            choice.batch           = std::move(*timed);
            choice.n_threads_batch = fastest_threads(choice.batch);
        }
    }
    pools.attach(ctx, choice.n_threads, choice.n_threads_batch);
    return choice;
}

double chosen_step_s(const ThreadChoice & choice) {
    for (const ThreadTiming & t : choice.decode) {
        if (t.n_threads == choice.n_threads) return t.step_s;
    }
    return 0.0;
}

std::string describe(const ThreadChoice & choice) {
    std::string s = std::to_string(choice.n_threads) + (choice.n_threads == 1 ? " thread" : " threads");
    if (choice.decode.empty()) return s + ", batch " + std::to_string(choice.n_threads_batch) + " (not measured)";
    s += " (" + timings_text(choice.decode) + ")";
    s += ", batch " + std::to_string(choice.n_threads_batch);
    if (!choice.batch.empty()) s += " (" + timings_text(choice.batch) + " per " + std::to_string(k_batch_tokens) + " tokens)";
    return s;
}

} // namespace specd::engine
