#pragma once
// One llama context on a loaded model with N sequences (plus, optionally, the draft model's
// or the draft head's context with as many) and the decode steps that run on it. Each sequence remembers the
// tokens its KV holds, so a request that shares a prefix with an earlier one (a chat that
// goes on) only evaluates the new part.
#include "cache/prompt_cache.h"
#include "core/logprobs.h"
#include "core/options.h"
#include "engine/context_memory.h"
#include "engine/cpu_threads.h"
#include "engine/draft_model.h"
#include "engine/forced_speller.h"
#include "engine/generation_output.h"
#include "engine/live_counters.h"
#include "engine/llama_handles.h"
#include "engine/model.h"
#include "engine/projector.h"
#include "engine/prompt_ends.h"
#include "engine/prompt_reuse.h"
#include "engine/request_run.h"
#include "engine/sequence_slot.h"
#include "spec/batch_depth.h"
#include "spec/depth_controller.h"
#include "spec/draft_charge.h"
#include "spec/drafting_gate.h"
#include "spec/step_costs.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

namespace specd::engine {

// The memory a session's contexts hold besides the weights.
struct SessionMemory {
    ContextBytes target;
    ContextBytes draft; // the draft model's or the draft head's context (all sequences)
};

// A request that ended during Session::step(): its result, or the error that ended it.
struct SeqFinished {
    uint64_t           id = 0;
    GenerateResult     result;
    std::exception_ptr error; // set: the request failed (specd::Error(cancelled) when cancelled)
};

// Continuous batching: a session holds `n_seq` sequences in one context (one KV cache shared
// by all, each sequence limited to num_ctx tokens). Each step() decodes one batch in which
// every running request has its part: a chunk of its prompt, or its last token plus the
// tokens drafted after it. Requests join and leave between steps.
class Session {
  public:
    // llama.cpp's limit on sequences in one context (LLAMA_MAX_SEQ in its private headers).
    static constexpr int k_max_parallel = 256;

    // `draft` is a draft model or a head (engine/draft_kind, told from its architecture).
    // Throws specd::Error(bad_request) when a context cannot be created or the draft's
    // vocabulary does not match.
    Session(std::shared_ptr<Model> model, const ContextOptions & opts, std::shared_ptr<Model> draft = nullptr,
            PromptCacheLink cache = {}, int n_seq = 1);
    ~Session();
    Session(const Session &)             = delete;
    Session & operator=(const Session &) = delete;

    // Starts a request on a free sequence (the one whose cache shares the longest prefix with
    // the prompt); returns its id. The request runs in the following step() calls. `emit`
    // receives valid UTF-8 text pieces, never a stop string. Throws specd::Error(bad_request)
    // for a prompt that cannot run (empty, too long), and when no sequence is free.
    uint64_t start(MultimodalPrompt prompt, GenerateOptions opts, TextSink emit, LogprobSink emit_logprobs,
                   const std::atomic<bool> & cancel);

    // One batched decode for every running request; returns those that ended in it. A
    // cancelled request ends at its next step with specd::Error(cancelled).
    std::vector<SeqFinished> step();

    int    n_seq() const { return static_cast<int>(slots_.size()); }
    // How many requests the last step's decode served (0: it decoded nothing).
    int    last_step_requests() const { return last_step_requests_; }
    size_t running() const { return runs_.size(); }
    bool   can_start() const { return runs_.size() < slots_.size(); }

    // The most tokens one batch (and micro-batch) of this context holds.
    int32_t batch_capacity() const { return batch_.capacity(); }

    const Model &          model() const { return *model_; }
    const ContextOptions & options() const { return opts_; }
    // The context length of one sequence, as asked for (clamped to the trained one).
    // llama.cpp may allocate a little more (it pads), but limits apply to this number.
    uint32_t               n_ctx() const { return n_ctx_; }
    int32_t                n_threads() const { return llama_n_threads(ctx_.get()); }
    // The thread counts the target and the draft decode with, and how they were chosen.
    const ThreadChoice &   threads() const { return threads_; }
    const ThreadChoice &   draft_threads() const { return draft_threads_; }

    const SessionMemory & memory() const { return memory_; }
    // What this session's requests did so far, round by round.
    const LiveCounters &  live() const { return live_; }

    // Saves every idle sequence into the prompt cache, if it is worth keeping: called before
    // the session is closed (the model unloads, or the next request needs other options).
    void park();

  private:
    SequenceSlot &       pick_slot(const MultimodalPrompt & prompt);
    // The depth every round of a step of `generating` requests drafts (spec/batch_depth.h),
    // from what their depth controllers expect of each depth and what their cost model
    // predicts; nullopt when none of them takes part (fixed depths, drafting off).
    std::optional<int>   batch_depth(int generating);
    // After a failed decode the cache may hold part of the batch: forget it for these runs.
    void                 fail_batch(const std::vector<RequestRun *> & in_batch, const std::exception_ptr & why);
    // After a target decode: feeds the head's own cache (EAGLE3) the step's tokens of the
    // runs that may draft, in one decode; returns the time it took (0: no such head).
    int64_t              feed_head(const std::vector<RequestRun *> & in_batch);
    // Evaluates one of `run`'s images into its sequence, on its own decodes.
    Projector::EvalTimes eval_image(RequestRun & run, const MultimodalPrompt & prompt, const ImageSpan & image);
    void                 choose_threads();
    void                 recheck_threads();
    // After calibration: drift watch and trials of the runner-up for a measured count.
    void                 watch_threads();
    // The one-token count for the next decode, and what that decode took on it.
    int32_t              one_token_threads();
    void                 one_token_step(int32_t n_threads, double step_s);
    static bool          abort_step(void * session);
    int64_t              draft_decodes() const {
        return draft_ctx_ ? draft_ctx_->decodes() : head_ctx_ ? head_ctx_->decodes() : 0;
    }

    std::shared_ptr<Model>                     model_;
    std::shared_ptr<Model>                     draft_model_;
    ContextOptions                             opts_;
    uint32_t                                   n_ctx_ = 0; // per sequence
    ThreadPools                                pools_;     // before every context: outlives them
    context_ptr                                ctx_;
    std::shared_ptr<DraftContext>              draft_ctx_; // shared with the slots' drafts
    std::shared_ptr<HeadContext>               head_ctx_;  // likewise, when the draft is a head
    Batch                                      batch_;
    std::vector<std::unique_ptr<SequenceSlot>> slots_;
    spec::DepthPrior                           prior_;
    spec::AcceptancePool                       acceptance_; // the running requests' drafts, pooled
    spec::StepCosts                            steps_;      // what a step costs by its positions
    spec::DraftingGate                         gate_;       // whether drafting pays, measured per batch size
    spec::BatchDepth                           batch_depth_; // one depth for a shared step's rounds
    spec::DraftCharge                          charge_;     // what each round's drafts cost it in a batch step
    LiveCounters                               live_;
    ForcedSpeller                              speller_; // learns how the target spells forced text
    PromptReuse                                reuse_;
    std::optional<RunEnv>                      env_;  // what every run uses of this session (set once ctx_ is)
    std::vector<std::unique_ptr<RequestRun>>   runs_; // in the order they started
    std::vector<RequestRun *>                  in_batch_; // the runs the running decode serves
    uint64_t                                   next_id_            = 0;
    int                                        last_step_requests_ = 0;
    uint64_t                                   clock_ = 0; // orders slot use, for picking the least recent
    SessionMemory                              memory_;
    ThreadChoice                               threads_;
    ThreadChoice                               draft_threads_;
    std::optional<StepDrift>                   drift_; // set while the target's count is a measured one
    std::optional<ThreadTrial>                 trial_; // likewise, when there is a runner-up to try
    bool                                       recheck_due_ = false;
    // Rechecks are spaced out: at least recheck_gap_ apart, doubling while they keep
    // confirming the same counts (a machine whose load comes and goes).
    std::chrono::steady_clock::time_point      next_recheck_{};
    std::chrono::seconds                       recheck_gap_{30};
};

// The Ollama truncation rule: keep the first `num_keep` tokens, drop the oldest of the rest
// so that the prompt leaves room for at least one generated token.
std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep);
// What a prompt must be tokenized to for truncate_prompt (engine/prompt_ends.h): its first
// num_keep and last tokens, with room to spare for a BOS removed and `context` put in front,
// so that a prompt whose middle is left out is still over the context.
EndsNeeded ends_kept(int32_t n_ctx, int32_t num_keep);
// The tokens one decode of a session holds (llama.cpp's n_batch and n_ubatch): num_batch, at
// most the sequences' whole context, and at least a round (the last token, forced and drafted
// tokens) for every sequence. A context's compute buffer grows with it (scheduler/load_estimate).
int32_t batch_tokens(int32_t num_batch, int32_t n_ctx, int n_seq);

} // namespace specd::engine
