#include "scheduler/model_instance.h"

#include "engine/chat_template.h"
#include "engine/context_factory.h"
#include "engine/devices.h"
#include "engine/embedder.h"
#include "engine/kv_cache_type.h"
#include "engine/model.h"
#include "engine/prompt_builder.h"
#include "engine/rpc_workers.h"
#include "engine/session.h"
#include "metrics/registry.h"
#include "scheduler/load_estimate.h"
#include "templates/ollama_prompt.h"

#include <algorithm>
#include <climits>
#include <set>
#include <cstdio>
#include <thread>

namespace specd::scheduler {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

// num_gpu for "every layer" (the option's largest value).
constexpr int32_t k_all_layers = 100000;

// A worker that takes longer than this to answer its first message is down or serving
// another client (ggml's RPC server takes one at a time).
constexpr std::chrono::milliseconds k_rpc_probe_timeout{3000};

// The scheduler counts what make_room admitted (a load, an embedding context) as loaded
// until it has ended, either way.
struct LoadAdmission {
    LoadArbiter *  arbiter;
    const ModelRunner & runner;
    ~LoadAdmission() {
        if (arbiter) arbiter->end_load(runner);
    }
};

// The offload devices a load may use: this machine's GPUs, then the configured RPC workers
// that answer now; and what the fit needs to know about the context the model will get.
engine::PlacementRequest offload_placement(const ContextOptions & context, const LoadEstimate & est, int n_seq) {
    engine::PlacementRequest p;
    p.num_gpu  = context.num_gpu;
    p.main_gpu = context.main_gpu;
    p.devices  = engine::local_offload_devices();
    if (const std::vector<RpcEndpoint> endpoints = engine::configured_rpc_endpoints(); !endpoints.empty()) {
        const auto workers = engine::rpc_devices(engine::probe_rpc_workers(endpoints, k_rpc_probe_timeout));
        p.devices.insert(p.devices.end(), workers.begin(), workers.end());
    }
    // The context the session will create (engine::Session): its compute buffer is part of the fit.
    const int32_t n_ctx = std::max(1, est.n_ctx);
    p.context = engine::sequences_params(uint32_t(n_ctx), n_seq, engine::batch_tokens(context.num_batch, n_ctx, n_seq));
    return p;
}

} // namespace

ModelInstance::ModelInstance(const RunnerConfig & cfg, const ModelRunner & runner) : cfg_(cfg), runner_(runner) {}

ModelInstance::~ModelInstance() { unload(); }

bool ModelInstance::has_model(const GenerateRequest & req, const ContextOptions & context) const {
    return model_ && loaded_digest_ == req.model.digest && model_->load_options().use_mmap == engine::maps_weights(context.use_mmap) &&
           model_->load_options().placement.num_gpu == context.num_gpu &&
           model_->load_options().placement.main_gpu == context.main_gpu;
}

bool ModelInstance::needs_load(const GenerateRequest & req, const ContextOptions & context) const {
    return !(has_model(req, context) && session_ && session_->options() == context);
}

std::optional<LoadedInfo> ModelInstance::ensure_loaded(const GenerateRequest & req, const ContextOptions & context,
                                                       DoneInfo & done) {
    if (!needs_load(req, context)) return std::nullopt;
    engine::ModelLoadOptions load_opts{engine::maps_weights(context.use_mmap), req.model.adapters};
    const bool same_model = has_model(req, context);

    const int64_t t0 = now_ns();
    if (session_) session_->park(); // its sequences may serve a later prompt
    if (session_ && same_model) live_base_.add(session_->live());
    session_.reset();
    embedder_.reset(); // sized like the session: recreated on its next use
    const LoadAdmission admission{cfg_.arbiter, runner_};
    const LoadEstimate est = estimate_load(req.model, context);
    if (!same_model) {
        unload();
        // Room first (other models may have to go), then the sequences that fit in it.
        const int want = cfg_.num_parallel > 0 ? cfg_.num_parallel : 1;
        check_context_size(est, want); // before any room is made or weight read
        const uint64_t free = cfg_.arbiter ? cfg_.arbiter->make_room(runner_, est.bytes(want)) : UINT64_MAX;
        n_seq_ = cfg_.num_parallel > 0 ? cfg_.num_parallel : default_parallel(est, free);
        engine::ModelLoadOptions draft_opts = load_opts;
        load_opts.placement = offload_placement(context, est, n_seq_);
        if (cfg_.arbiter) load_opts.placement.held = cfg_.arbiter->device_held(runner_);
        // A draft goes with all of its layers to the GPUs the target's layers went to, as
        // llama-server places it, and the fit leaves it room there. It stays on the host beside
        // RPC workers: it decodes one token at a time, where a round trip to a worker costs
        // more than its layers.
        const std::vector<ggml_backend_dev_t> gpus = engine::local_offload_devices();
        // A head cannot be fitted alone (its context is made against the target's): it goes
        // with its layers to the target's GPUs without a share of the fit.
        if (req.model.draft && !gpus.empty() && !engine::is_head(est.draft_kind)) {
            load_opts.placement.draft = req.model.draft;
        }
        load_opts.load_mtp = !req.model.draft && est.draft_kind == engine::DraftKind::mtp;
        model_ = engine::Model::load(req.model.gguf, load_opts);
        for (ggml_backend_dev_t d : model_->devices()) {
            if (std::find(gpus.begin(), gpus.end(), d) != gpus.end()) draft_opts.placement.devices.push_back(d);
        }
        if (!draft_opts.placement.devices.empty()) draft_opts.placement.num_gpu = k_all_layers;
        draft_         = req.model.draft ? engine::Model::load(*req.model.draft, draft_opts) : nullptr;
        const int32_t threads = context.num_thread > 0 ? context.num_thread
                                                       : int32_t(std::max(1u, std::thread::hardware_concurrency()));
        projector_     = req.model.projector ? engine::Projector::load(*req.model.projector, *model_, threads) : nullptr;
        template_      = std::make_unique<engine::ChatTemplate>(model_->get());
        go_template_.reset();
        if (req.model.template_text) go_template_ = templates::parse_ollama_template(*req.model.template_text);
        loaded_digest_ = req.model.digest;
        memory_owner_  = memory::process_ledger().open_owner(memory::OwnerKind::model, req.model.name);
        metrics::server_metrics().model_loads_total.add();
    } else {
        // Another context on the loaded model (a larger num_ctx): its KV must fit too.
        check_context_size(est, n_seq_);
        if (cfg_.arbiter) cfg_.arbiter->make_room(runner_, est.bytes(n_seq_));
    }
    // States restore only into the same pair of models (the draft's file is named by digest).
    engine::PromptCacheLink link{cfg_.cache, req.model.digest + "+" +
                                                 (req.model.draft ? req.model.draft->filename().string() : "")};
    session_        = std::make_unique<engine::Session>(model_, context, draft_, std::move(link), n_seq_);
    embedder_bytes_ = est.embedder;
    done.load_ns += now_ns() - t0;
    account();
    if (const auto & wanted = engine::configured_kv_cache_type();
        engine::kv_cache_type_for(model_->info(), wanted).type != wanted.type) {
        std::fprintf(stderr, "specd: %s: its attention heads are not a multiple of 64 values, which a %s cache needs: its KV cache stays f16\n",
                     req.model.name.c_str(), wanted.name());
    }
    std::fprintf(stderr, "specd: %s: %s%s\n", req.model.name.c_str(), engine::describe(session_->threads()).c_str(),
                 draft_ ? ("; draft " + engine::describe(session_->draft_threads())).c_str() : "");

    LoadedInfo info;
    info.name               = req.model.name;
    info.digest             = req.model.digest;
    info.size_bytes         = model_->size_bytes();
    info.context_length     = session_->n_ctx();
    info.parallel           = session_->n_seq();
    info.family             = model_->info().architecture;
    info.parameter_size     = engine::format_parameter_count(model_->info().n_params);
    info.quantization_level = model_->info().file_type;
    info.memory_owner       = memory_owner_.owner().id;
    info.threads            = session_->threads().n_threads;
    info.threads_batch      = session_->threads().n_threads_batch;
    info.draft_threads      = draft_ ? session_->draft_threads().n_threads : 0;
    info.kv_cache_type      = engine::kv_cache_type_for(model_->info(), engine::configured_kv_cache_type()).name();
    info.live               = live_base_;
    return info;
}

void ModelInstance::embed(Job & job, DoneInfo & done) {
    const EmbedInput & input = *job.request.embed;
    if (!embedder_) {
        // A second context on the model, sized by num_ctx: room for it first (a num_ctx that
        // the session takes can need gigabytes here).
        const LoadAdmission admission{cfg_.arbiter, runner_};
        if (cfg_.arbiter) cfg_.arbiter->make_room(runner_, footprint() + embedder_bytes_);
        embedder_ = std::make_unique<engine::Embedder>(model_, session_->n_ctx(), session_->n_threads());
        account();
    }
    const int64_t  t0    = now_ns();
    const uint32_t n_ctx = embedder_->n_ctx();
    std::vector<std::vector<llama_token>> inputs;
    inputs.reserve(input.inputs.size());
    for (size_t i = 0; i < input.inputs.size(); ++i) {
        // Only the beginning is kept: a long input is tokenized only that far (engine/prompt_ends.h).
        const std::string name = "input " + std::to_string(i);
        auto [tokens, elided]  = engine::tokenize_ends(*model_, input.inputs[i], /*add_special=*/true,
                                                       /*parse_special=*/false, {n_ctx + 1, 0}, &job.cancel, name);
        if (tokens.empty()) throw bad_request(name + " has no tokens");
        if (tokens.size() > n_ctx) {
            if (!input.truncate) {
                throw bad_request(name + " is " + (elided ? "more than " : "") + std::to_string(tokens.size()) +
                                  " tokens, longer than the context length of " + std::to_string(n_ctx) +
                                  " (truncate is false)");
            }
            tokens.resize(n_ctx); // Ollama keeps the beginning
        }
        done.result.stats.prompt_eval_count += static_cast<int32_t>(tokens.size());
        inputs.push_back(std::move(tokens));
    }
    done.embeddings           = embedder_->embed(inputs, job.cancel);
    account(); // the output buffer grows with the largest batch
    done.result.stats.prompt_count   = done.result.stats.prompt_eval_count;
    done.result.stats.prompt_eval_ns = now_ns() - t0;
    done.result.reason               = DoneReason::stop;
}

void ModelInstance::unload() {
    if (session_) session_->park();
    session_.reset();
    embedder_.reset();
    template_.reset();
    go_template_.reset();
    projector_.reset();
    min_batch_ = 0;
    model_.reset();
    draft_.reset();
    loaded_digest_.clear();
    weights_.release();
    kv_target_.release();
    kv_draft_.release();
    compute_.release();
    vocab_index_.release();
    offloaded_.clear();
    memory_owner_.close();
    live_base_ = {};
    footprint_ = 0;
}

engine::LiveCounters ModelInstance::live() const {
    engine::LiveCounters live = live_base_;
    if (session_) live.add(session_->live());
    return live;
}

void ModelInstance::account() {
    const auto set = [&](memory::Reservation & r, memory::Bucket bucket, size_t bytes) {
        if (!r.held()) r = memory_owner_.reserve(bucket, bytes);
        else r.resize(bytes);
    };
    const engine::SessionMemory & mem = session_->memory();
    const engine::ContextBytes    embed = embedder_ ? embedder_->memory() : engine::ContextBytes{};
    // What sits on other devices than the host (GPUs, RPC workers): the target's layers, its
    // contexts' KV and compute there, and the draft's on a GPU. The projector stays on the host.
    engine::DeviceSplit offloaded = model_->offloaded();
    engine::add_split(offloaded, mem.target.offloaded);
    engine::add_split(offloaded, embed.offloaded);
    engine::DeviceSplit draft_offloaded = draft_ ? draft_->offloaded() : engine::DeviceSplit{};
    engine::add_split(draft_offloaded, mem.draft.offloaded);
    const auto sum = [](const engine::DeviceSplit & split) {
        engine::DeviceBytes all;
        for (const auto & [name, b] : split) {
            all.weights += b.weights;
            all.kv += b.kv;
            all.compute += b.compute;
        }
        return all;
    };
    const engine::DeviceBytes off       = sum(offloaded);
    const engine::DeviceBytes draft_off = sum(draft_offloaded);
    const auto host = [](size_t all, size_t elsewhere) { return all > elsewhere ? all - elsewhere : 0; };
    set(weights_, memory::Bucket::weights, host(model_->size_bytes(), off.weights) +
                                               (draft_ ? host(draft_->size_bytes(), draft_off.weights) : 0) +
                                               (projector_ ? projector_->size_bytes() : 0));
    set(kv_target_, memory::Bucket::kv_target, host(mem.target.kv + embed.kv, off.kv));
    set(kv_draft_, memory::Bucket::kv_draft, host(mem.draft.kv, draft_off.kv));
    set(compute_, memory::Bucket::compute,
        host(mem.target.compute + mem.draft.compute + embed.compute, off.compute + draft_off.compute));
    for (auto it = offloaded_.begin(); it != offloaded_.end();) {
        if (!offloaded.count(it->first.first) && !draft_offloaded.count(it->first.first)) it = offloaded_.erase(it);
        else ++it;
    }
    std::set<std::string> names;
    for (const auto & [name, b] : offloaded) names.insert(name);
    for (const auto & [name, b] : draft_offloaded) names.insert(name);
    size_t off_total = 0;
    for (const std::string & name : names) {
        const auto at = [](const engine::DeviceSplit & split, const std::string & n) {
            const auto it = split.find(n);
            return it == split.end() ? engine::DeviceBytes{} : it->second;
        };
        const engine::DeviceBytes b = at(offloaded, name);
        const engine::DeviceBytes d = at(draft_offloaded, name);
        for (const auto & [bucket, bytes] : {std::pair{memory::Bucket::weights, b.weights + d.weights},
                                             std::pair{memory::Bucket::kv_target, b.kv},
                                             std::pair{memory::Bucket::kv_draft, d.kv},
                                             std::pair{memory::Bucket::compute, b.compute + d.compute}}) {
            memory::Reservation & r = offloaded_[{name, bucket}];
            if (!r.held()) r = memory_owner_.reserve(bucket, bytes, name);
            else r.resize(bytes);
            off_total += bytes;
        }
    }
    // Built by the first constrained request; shared by every later one.
    set(vocab_index_, memory::Bucket::grammar, model_->vocab_index_bytes());
    // The host's bytes: what the memory budget (SPECD_MAX_MEMORY) holds models to.
    footprint_ = weights_.bytes() + kv_target_.bytes() + kv_draft_.bytes() + compute_.bytes() + vocab_index_.bytes();
    offloaded_bytes_ = off_total;
}


engine::MultimodalPrompt ModelInstance::build_prompt(const GenerateRequest & req, const std::atomic<bool> & cancel) const {
    // The request's template wins over the model's TEMPLATE, which wins over the GGUF's.
    std::optional<templates::GoTemplate> request_template;
    if (req.prompt.template_text) request_template = templates::parse_ollama_template(*req.prompt.template_text);
    const templates::GoTemplate * go = request_template ? &*request_template
                                     : go_template_      ? &*go_template_
                                                         : nullptr;
    // A prompt far over the context is tokenized only at the ends truncation keeps.
    const int32_t               n_ctx = int32_t(session_->n_ctx());
    const engine::PromptReading reading{engine::ends_kept(n_ctx, req.generate.num_keep), &cancel, n_ctx};
    return engine::build_multimodal_prompt(*model_, *template_, req.prompt, req.model.system, projector_.get(), go,
                                           reading);
}

} // namespace specd::scheduler
