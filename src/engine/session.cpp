#include "engine/session.h"

#include "core/error.h"
#include "engine/backend.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "engine/utf8_stream.h"
#include "grammar/json_schema.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace specd::engine {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

int32_t clamp_ctx(int32_t requested, int32_t trained) {
    if (trained > 0 && requested > trained) {
        std::fprintf(stderr, "specd: num_ctx %d is above the model's trained context %d; using %d\n",
                     requested, trained, trained);
        return trained;
    }
    return requested;
}

// One thread per core, except for very small models: a decode step of a few MB of weights is
// shorter than the threads' barrier, and on a busy machine a descheduled worker stalls every
// step (measured on the 17 MB test model, 2 cores, other work running: 1 thread ~1500-3000
// tokens/s, 2 threads 5-20 tokens/s).
int32_t default_threads(const Model & model) {
    constexpr uint64_t small_model_bytes = 256ull << 20;
    if (model.size_bytes() < small_model_bytes) return 1;
    return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

} // namespace

std::vector<llama_token> truncate_prompt(const std::vector<llama_token> & prompt, int32_t n_ctx, int32_t num_keep) {
    const size_t limit = static_cast<size_t>(std::max(n_ctx - 1, 1));
    if (prompt.size() <= limit) return prompt;
    const size_t keep = std::min(static_cast<size_t>(std::max(num_keep, 0)), limit / 2);
    std::vector<llama_token> out(prompt.begin(), prompt.begin() + keep);
    out.insert(out.end(), prompt.end() - (limit - keep), prompt.end());
    return out;
}

Session::Session(std::shared_ptr<Model> model, const ContextOptions & opts) :
    model_(std::move(model)),
    opts_(opts),
    n_ctx_(static_cast<uint32_t>(clamp_ctx(opts.num_ctx, model_->n_ctx_train()))),
    batch_(std::max(1, std::min(opts.num_batch, static_cast<int32_t>(n_ctx_))), 1) {
    ensure_backend();
    const int32_t n_ctx = static_cast<int32_t>(n_ctx_);
    const int32_t n_threads = opts.num_thread > 0 ? opts.num_thread : default_threads(*model_);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx               = n_ctx;
    cp.n_batch             = batch_.capacity();
    cp.n_ubatch            = batch_.capacity();
    cp.n_seq_max           = 1;
    cp.n_threads           = n_threads;
    cp.n_threads_batch     = n_threads;
    cp.abort_callback      = [](void * data) {
        const auto * self = static_cast<const Session *>(data);
        return self->cancel_ != nullptr && self->cancel_->load(std::memory_order_relaxed);
    };
    cp.abort_callback_data = this;

    LogCapture capture;
    ctx_.reset(llama_init_from_model(model_->get(), cp));
    if (!ctx_) {
        const std::string why = capture.first_error();
        throw bad_request("cannot create a context of " + std::to_string(n_ctx) + " tokens" +
                          (why.empty() ? "" : ": " + why));
    }
}

void Session::decode_or_throw(const std::atomic<bool> & cancel) {
    const int32_t rc = llama_decode(ctx_.get(), batch_.get());
    if (rc == 0) return;
    // After a failed or aborted decode the cache may hold part of the batch: forget it all.
    llama_memory_clear(llama_get_memory(ctx_.get()), true);
    cached_.clear();
    if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
    throw Error(ErrorKind::internal, "llama_decode failed (" + std::to_string(rc) + ")");
}

int32_t Session::prefill(const std::vector<llama_token> & prompt, const std::atomic<bool> & cancel,
                         GenerateStats & stats) {
    llama_memory_t mem = llama_get_memory(ctx_.get());
    size_t common = 0;
    while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common]) ++common;
    if (common == prompt.size()) --common; // the last prompt token must be decoded for its logits
    if (!llama_memory_seq_rm(mem, 0, static_cast<llama_pos>(common), -1)) {
        llama_memory_clear(mem, true);
        common = 0;
    }
    cached_.resize(common);

    int32_t last_idx = -1;
    for (size_t i = common; i < prompt.size();) {
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        batch_.clear();
        for (; i < prompt.size() && batch_.size() < batch_.capacity(); ++i) {
            last_idx = batch_.add(prompt[i], static_cast<llama_pos>(i), 0, i + 1 == prompt.size());
        }
        decode_or_throw(cancel);
        cached_.insert(cached_.end(), prompt.begin() + cached_.size(), prompt.begin() + i);
    }
    stats.prompt_eval_count = static_cast<int32_t>(prompt.size() - common);
    return last_idx;
}

void Session::shift_context(int32_t n_keep) {
    llama_memory_t mem     = llama_get_memory(ctx_.get());
    const int32_t  n_past  = static_cast<int32_t>(cached_.size());
    const int32_t  discard = (n_past - n_keep) / 2;
    llama_memory_seq_rm(mem, 0, n_keep, n_keep + discard);
    llama_memory_seq_add(mem, 0, n_keep + discard, n_past, -discard);
    cached_.erase(cached_.begin() + n_keep, cached_.begin() + n_keep + discard);
}

GenerateResult Session::generate(std::vector<llama_token> prompt, const GenerateOptions & opts,
                                 const TextSink & emit, const std::atomic<bool> & cancel) {
    struct CancelScope {
        Session & s;
        CancelScope(Session & s, const std::atomic<bool> & c) : s(s) { s.cancel_ = &c; }
        ~CancelScope() { s.cancel_ = nullptr; }
    } scope(*this, cancel);

    const int32_t n_ctx = static_cast<int32_t>(this->n_ctx());
    if (prompt.empty()) throw bad_request("prompt is empty after tokenization");
    if (static_cast<int32_t>(prompt.size()) >= n_ctx) {
        if (!opts.truncate) {
            throw bad_request("the prompt is " + std::to_string(prompt.size()) +
                              " tokens, longer than the context length of " + std::to_string(n_ctx) +
                              " tokens (truncate is false)");
        }
        prompt = truncate_prompt(prompt, n_ctx, opts.num_keep);
    }

    GenerateResult result;
    Sampler        sampler(model_->vocab(), opts.sampling, opts.grammar);
    const size_t   history = std::min(prompt.size(), static_cast<size_t>(std::max(opts.sampling.repeat_last_n, 0)));
    sampler.accept_history(std::span(prompt).last(history));

    const int64_t t0  = now_ns();
    int32_t       idx = prefill(prompt, cancel, result.stats);
    const int64_t t1  = now_ns();
    result.stats.prompt_eval_ns = t1 - t0;
    result.context              = prompt;

    Utf8Stream    utf8;
    StopMatcher   stops(opts.stop);
    const int32_t n_keep     = std::clamp(opts.num_keep, 0, n_ctx / 2);
    const bool    can_shift  = opts.shift && opts.num_predict != -2 &&
                               llama_memory_can_shift(llama_get_memory(ctx_.get()));
    bool          stopped    = false;
    std::string   answer; // the text so far, kept only when end_on_complete_json needs it

    for (;;) {
        if (cancel.load()) throw Error(ErrorKind::cancelled, "request cancelled");
        const llama_token token = sampler.sample(ctx_.get(), idx);
        if (model_->is_eog(token)) { result.reason = DoneReason::stop; break; }
        ++result.stats.eval_count;
        result.context.push_back(token);

        const auto r = stops.push(utf8.push(model_->token_piece(token)));
        if (!r.text.empty()) emit(r.text);
        if (r.stopped) { stopped = true; result.reason = DoneReason::stop; break; }
        if (opts.end_on_complete_json) {
            answer += r.text;
            if (grammar::is_complete_json(answer)) { result.reason = DoneReason::stop; break; }
        }
        if (opts.num_predict > 0 && result.stats.eval_count >= opts.num_predict) {
            result.reason = DoneReason::length;
            break;
        }
        if (static_cast<int32_t>(cached_.size()) + 1 > n_ctx) {
            if (!can_shift) { result.reason = DoneReason::length; break; }
            shift_context(n_keep);
        }
        batch_.clear();
        idx = batch_.add(token, static_cast<llama_pos>(cached_.size()), 0, true);
        decode_or_throw(cancel);
        cached_.push_back(token);
    }
    if (!stopped) {
        const auto r = stops.push(utf8.flush());
        std::string tail = r.text + (r.stopped ? "" : stops.flush());
        if (!tail.empty()) emit(tail);
    }
    result.stats.eval_ns = now_ns() - t1;
    return result;
}

} // namespace specd::engine
