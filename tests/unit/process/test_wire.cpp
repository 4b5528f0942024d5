#include "process/wire.h"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using specd::DecodedImage;
using specd::DoneReason;
using specd::EmbedInput;
using specd::ErrorKind;
using specd::GenerateRequest;
using specd::ImagePtr;
using specd::Message;
using specd::PixelBuffer;
using specd::PromptInput;
using specd::ThinkSetting;
using specd::TokenLogprob;
using specd::memory::Bucket;
using specd::memory::LedgerSnapshot;
using specd::memory::OwnerKind;
using specd::memory::PromptCacheStats;
using specd::scheduler::Event;
using specd::scheduler::LoadedInfo;
using nlohmann::json;
namespace process = specd::process;

namespace {

constexpr float k_inf = std::numeric_limits<float>::infinity();

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// What the peer reads: the JSON as text and back, as write_frame and read_frame carry it.
json through_text(const json & j) { return json::parse(j.dump()); }

ImagePtr make_image(int width, int height, uint8_t seed, std::string identity) {
    auto         image = std::make_shared<DecodedImage>();
    const size_t n     = size_t(width) * size_t(height) * 3;
    image->width       = width;
    image->height      = height;
    image->pixels      = PixelBuffer(new uint8_t[n], +[](uint8_t * p) { delete[] p; });
    for (size_t i = 0; i < n; ++i) image->pixels[i] = uint8_t(seed + i * 13);
    image->identity = std::move(identity);
    return image;
}

void expect_same_image(const ImagePtr & got, const ImagePtr & want) {
    ASSERT_TRUE(got);
    ASSERT_TRUE(want);
    EXPECT_EQ(got->width, want->width);
    EXPECT_EQ(got->height, want->height);
    EXPECT_EQ(got->identity, want->identity);
    ASSERT_EQ(got->rgb().size(), want->rgb().size());
    EXPECT_EQ(std::memcmp(got->rgb().data(), want->rgb().data(), want->rgb().size()), 0);
    EXPECT_NE(got->pixels.get_deleter(), nullptr);
}

void expect_same_images(const std::vector<ImagePtr> & got, const std::vector<ImagePtr> & want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) expect_same_image(got[i], want[i]);
}

// Every field away from its default, and some text that is not UTF-8.
GenerateRequest full_request(const ImagePtr & shared, const ImagePtr & other) {
    GenerateRequest r;
    r.model.name          = "tiny:latest";
    r.model.gguf          = "models/blobs/sha256-abc";
    r.model.digest        = "sha256:0123";
    r.model.system        = "You are terse.";
    r.model.draft         = "models/draft.gguf";
    r.model.projector     = std::filesystem::path("mm\xff" "proj.gguf"); // a path need not be UTF-8
    r.model.template_text = "{{ .Prompt }}";
    r.model.adapters      = {"a.gguf", "b\xc0.gguf"};

    PromptInput & p = r.prompt;
    p.kind          = PromptInput::Kind::chat;
    p.prompt        = "Why is the sky blue?";
    p.system        = "system text";
    p.suffix        = "the suffix";
    p.raw           = true;
    Message user;
    user.role         = "user";
    user.content      = "look at this";
    user.images       = {shared};
    user.thinking     = "user thinking";
    user.tool_calls   = {{"get_weather", R"({"city":"Paris"})", "call_1"}, {"get_time", "{}", ""}};
    user.tool_name    = "get_weather";
    user.tool_call_id = "call_0";
    Message assistant;
    assistant.role    = "assistant";
    assistant.content = "caf\xc3\xa9 \xe2\x82"; // ends inside a character
    assistant.images  = {other, shared};
    assistant.thinking = "reasoning";
    p.messages         = {user, assistant};
    p.context          = {1, -2, 2147483647};
    p.images           = {shared};
    p.template_text    = "{{ .System }}";
    p.tools            = {{"get_weather", "Weather of a city", R"({"type":"object"})"}, {"noop", "", "{}"}};
    p.tool_required    = true;
    p.tool_forced      = "get_weather";
    p.think            = ThinkSetting{true, "high"};

    r.context.num_ctx    = 8192;
    r.context.num_batch  = 256;
    r.context.num_thread = 6;
    r.context.use_mmap   = false;
    r.context.num_gpu    = 12;
    r.context.main_gpu   = 1;

    specd::SamplingOptions & s = r.generate.sampling;
    s.temperature       = 0.1f;
    s.top_k             = 7;
    s.top_p             = 0.35f;
    s.min_p             = 0.05f;
    s.typical_p         = 0.7f;
    s.repeat_penalty    = 1.1f;
    s.repeat_last_n     = 128;
    s.presence_penalty  = -0.5f;
    s.frequency_penalty = 0.25f;
    s.seed              = 1234567890123;
    s.mirostat          = 2;
    s.mirostat_tau      = 4.5f;
    s.mirostat_eta      = 0.2f;
    s.logit_bias        = {{15, -100.0f}, {42, -3.4e-38f}, {7, -k_inf}};

    specd::GenerateOptions & g = r.generate;
    g.num_predict          = 77;
    g.num_keep             = 9;
    g.stop                 = {"\n\n", "END"};
    g.truncate             = false;
    g.shift                = false;
    g.grammar              = "root ::= \"yes\"";
    g.end_on_complete_json = true;
    g.draft_num_predict    = 5;
    g.draft_fixed_k        = 3;
    g.rejection_sampling   = true;
    g.logprobs             = 4;

    r.keep_alive = std::chrono::minutes(7) + std::chrono::nanoseconds(3);
    r.load_only  = true;
    r.embed      = EmbedInput{{"one", "two"}, false};
    return r;
}

std::string native(const std::optional<std::filesystem::path> & p) { return p ? "path " + p->native() : "none"; }

void expect_same_request(const GenerateRequest & got, const GenerateRequest & want) {
    EXPECT_EQ(got.model.name, want.model.name);
    // Paths compared as their bytes (gtest cannot print a path: it iterates into paths).
    EXPECT_EQ(got.model.gguf.native(), want.model.gguf.native());
    EXPECT_EQ(got.model.digest, want.model.digest);
    EXPECT_EQ(got.model.system, want.model.system);
    EXPECT_EQ(native(got.model.draft), native(want.model.draft));
    EXPECT_EQ(native(got.model.projector), native(want.model.projector));
    EXPECT_EQ(got.model.template_text, want.model.template_text);
    ASSERT_EQ(got.model.adapters.size(), want.model.adapters.size());
    for (size_t i = 0; i < want.model.adapters.size(); ++i) {
        EXPECT_EQ(got.model.adapters[i].native(), want.model.adapters[i].native());
    }

    const PromptInput & p = got.prompt;
    const PromptInput & q = want.prompt;
    EXPECT_EQ(p.kind, q.kind);
    EXPECT_EQ(p.prompt, q.prompt);
    EXPECT_EQ(p.system, q.system);
    EXPECT_EQ(p.suffix, q.suffix);
    EXPECT_EQ(p.raw, q.raw);
    ASSERT_EQ(p.messages.size(), q.messages.size());
    for (size_t i = 0; i < q.messages.size(); ++i) {
        const Message & a = p.messages[i];
        const Message & b = q.messages[i];
        EXPECT_EQ(a.role, b.role);
        EXPECT_EQ(a.content, b.content);
        expect_same_images(a.images, b.images);
        EXPECT_EQ(a.thinking, b.thinking);
        ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
        for (size_t k = 0; k < b.tool_calls.size(); ++k) {
            EXPECT_EQ(a.tool_calls[k].name, b.tool_calls[k].name);
            EXPECT_EQ(a.tool_calls[k].arguments, b.tool_calls[k].arguments);
            EXPECT_EQ(a.tool_calls[k].id, b.tool_calls[k].id);
        }
        EXPECT_EQ(a.tool_name, b.tool_name);
        EXPECT_EQ(a.tool_call_id, b.tool_call_id);
    }
    EXPECT_EQ(p.context, q.context);
    expect_same_images(p.images, q.images);
    EXPECT_EQ(p.template_text, q.template_text);
    ASSERT_EQ(p.tools.size(), q.tools.size());
    for (size_t i = 0; i < q.tools.size(); ++i) {
        EXPECT_EQ(p.tools[i].name, q.tools[i].name);
        EXPECT_EQ(p.tools[i].description, q.tools[i].description);
        EXPECT_EQ(p.tools[i].parameters, q.tools[i].parameters);
    }
    EXPECT_EQ(p.tool_required, q.tool_required);
    EXPECT_EQ(p.tool_forced, q.tool_forced);
    ASSERT_EQ(p.think.has_value(), q.think.has_value());
    if (q.think) {
        EXPECT_EQ(p.think->enabled, q.think->enabled);
        EXPECT_EQ(p.think->effort, q.think->effort);
    }

    EXPECT_EQ(got.context, want.context);

    const specd::SamplingOptions & s = got.generate.sampling;
    const specd::SamplingOptions & t = want.generate.sampling;
    EXPECT_EQ(bits(s.temperature), bits(t.temperature));
    EXPECT_EQ(s.top_k, t.top_k);
    EXPECT_EQ(bits(s.top_p), bits(t.top_p));
    EXPECT_EQ(bits(s.min_p), bits(t.min_p));
    EXPECT_EQ(bits(s.typical_p), bits(t.typical_p));
    EXPECT_EQ(bits(s.repeat_penalty), bits(t.repeat_penalty));
    EXPECT_EQ(s.repeat_last_n, t.repeat_last_n);
    EXPECT_EQ(bits(s.presence_penalty), bits(t.presence_penalty));
    EXPECT_EQ(bits(s.frequency_penalty), bits(t.frequency_penalty));
    EXPECT_EQ(s.seed, t.seed);
    EXPECT_EQ(s.mirostat, t.mirostat);
    EXPECT_EQ(bits(s.mirostat_tau), bits(t.mirostat_tau));
    EXPECT_EQ(bits(s.mirostat_eta), bits(t.mirostat_eta));
    ASSERT_EQ(s.logit_bias.size(), t.logit_bias.size());
    for (size_t i = 0; i < t.logit_bias.size(); ++i) {
        EXPECT_EQ(s.logit_bias[i].first, t.logit_bias[i].first);
        EXPECT_EQ(bits(s.logit_bias[i].second), bits(t.logit_bias[i].second));
    }

    const specd::GenerateOptions & g = got.generate;
    const specd::GenerateOptions & h = want.generate;
    EXPECT_EQ(g.num_predict, h.num_predict);
    EXPECT_EQ(g.num_keep, h.num_keep);
    EXPECT_EQ(g.stop, h.stop);
    EXPECT_EQ(g.truncate, h.truncate);
    EXPECT_EQ(g.shift, h.shift);
    EXPECT_EQ(g.grammar, h.grammar);
    EXPECT_EQ(g.end_on_complete_json, h.end_on_complete_json);
    EXPECT_EQ(g.draft_num_predict, h.draft_num_predict);
    EXPECT_EQ(g.draft_fixed_k, h.draft_fixed_k);
    EXPECT_EQ(g.rejection_sampling, h.rejection_sampling);
    EXPECT_EQ(g.logprobs, h.logprobs);

    EXPECT_EQ(got.keep_alive, want.keep_alive);
    EXPECT_EQ(got.load_only, want.load_only);
    ASSERT_EQ(got.embed.has_value(), want.embed.has_value());
    if (want.embed) {
        EXPECT_EQ(got.embed->inputs, want.embed->inputs);
        EXPECT_EQ(got.embed->truncate, want.embed->truncate);
    }
}

GenerateRequest request_round_trip(const GenerateRequest & req) {
    std::vector<std::string> blobs;
    const json               j = through_text(process::request_to_json(req, blobs));
    return process::request_from_json(j, blobs);
}

// Floats whose text form is easy to get wrong: not exact in decimal, near the bottom of the
// normal range, subnormal, the largest, negative zero.
const std::vector<float> k_awkward_floats = {
    0.1f, -3.4e-38f, 1e-45f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
    std::numeric_limits<float>::max(), -0.0f, 16777217.0f, 1.0f / 3.0f, -123.456f,
};

Event full_done_event() {
    Event e;
    e.kind  = Event::Kind::done;
    e.text  = "done text";
    e.error = ErrorKind::busy;

    specd::engine::GenerateResult & r = e.done.result;
    r.reason                          = DoneReason::length;
    r.stats                           = {11, 12, 13, 14, 15, 16, 17, 18, 19};
    r.speculation.rounds              = 21;
    r.speculation.drafted             = 22;
    r.speculation.accepted            = 23;
    r.speculation.k_sum               = 24;
    r.speculation.zero_k_rounds       = 25;
    r.speculation.probes              = 26;
    r.speculation.drafted_per_position  = {27, 28, 29};
    r.speculation.accepted_per_position = {30, 31};
    r.grammar_drafts                    = {41, 42, 43, 44, 45, 46};
    r.k_histogram                       = {0, 51, 52, int64_t(1) << 40};
    r.context                           = {61, -62, 63};
    r.drafter                           = "gemma4-assistant";
    e.done.load_ns                      = 71;
    e.done.total_ns                     = int64_t(72) << 33;

    std::vector<float> nans = {std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7fc01234u), k_inf, -k_inf};
    e.done.embeddings       = {k_awkward_floats, {}, nans};
    e.logprobs              = {{"tok", -0.5f, {{"alt", -1.5f}}}};
    return e;
}

Event event_round_trip(const Event & e) {
    std::vector<std::string> blobs;
    const json               j = through_text(process::event_to_json(e, blobs));
    return process::event_from_json(j, blobs);
}

void expect_same_floats(const std::vector<float> & got, const std::vector<float> & want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(bits(got[i]), bits(want[i])) << "float " << i << ": " << want[i];
}

void expect_same_logprobs(const std::vector<TokenLogprob> & got, const std::vector<TokenLogprob> & want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].token, want[i].token);
        EXPECT_EQ(bits(got[i].logprob), bits(want[i].logprob)) << want[i].logprob;
        ASSERT_EQ(got[i].top.size(), want[i].top.size());
        for (size_t k = 0; k < want[i].top.size(); ++k) {
            EXPECT_EQ(got[i].top[k].token, want[i].top[k].token);
            EXPECT_EQ(bits(got[i].top[k].logprob), bits(want[i].top[k].logprob)) << want[i].top[k].logprob;
        }
    }
}

void expect_same_event(const Event & got, const Event & want) {
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.text, want.text);
    EXPECT_EQ(got.error, want.error);

    const specd::engine::GenerateResult & r = got.done.result;
    const specd::engine::GenerateResult & w = want.done.result;
    EXPECT_EQ(r.reason, w.reason);
    EXPECT_EQ(r.stats.prompt_eval_count, w.stats.prompt_eval_count);
    EXPECT_EQ(r.stats.prompt_count, w.stats.prompt_count);
    EXPECT_EQ(r.stats.prompt_eval_ns, w.stats.prompt_eval_ns);
    EXPECT_EQ(r.stats.eval_count, w.stats.eval_count);
    EXPECT_EQ(r.stats.eval_ns, w.stats.eval_ns);
    EXPECT_EQ(r.stats.image_count, w.stats.image_count);
    EXPECT_EQ(r.stats.image_tokens, w.stats.image_tokens);
    EXPECT_EQ(r.stats.image_encode_ns, w.stats.image_encode_ns);
    EXPECT_EQ(r.stats.image_decode_ns, w.stats.image_decode_ns);
    EXPECT_EQ(r.speculation.rounds, w.speculation.rounds);
    EXPECT_EQ(r.speculation.drafted, w.speculation.drafted);
    EXPECT_EQ(r.speculation.accepted, w.speculation.accepted);
    EXPECT_EQ(r.speculation.k_sum, w.speculation.k_sum);
    EXPECT_EQ(r.speculation.zero_k_rounds, w.speculation.zero_k_rounds);
    EXPECT_EQ(r.speculation.probes, w.speculation.probes);
    EXPECT_EQ(r.speculation.drafted_per_position, w.speculation.drafted_per_position);
    EXPECT_EQ(r.speculation.accepted_per_position, w.speculation.accepted_per_position);
    EXPECT_EQ(r.grammar_drafts.forced, w.grammar_drafts.forced);
    EXPECT_EQ(r.grammar_drafts.forced_accepted, w.grammar_drafts.forced_accepted);
    EXPECT_EQ(r.grammar_drafts.truncated_rounds, w.grammar_drafts.truncated_rounds);
    EXPECT_EQ(r.grammar_drafts.truncated_tokens, w.grammar_drafts.truncated_tokens);
    EXPECT_EQ(r.grammar_drafts.no_legal_draft, w.grammar_drafts.no_legal_draft);
    EXPECT_EQ(r.grammar_drafts.grammar_ns, w.grammar_drafts.grammar_ns);
    EXPECT_EQ(r.k_histogram, w.k_histogram);
    EXPECT_EQ(r.context, w.context);
    EXPECT_EQ(r.drafter, w.drafter);
    EXPECT_EQ(got.done.load_ns, want.done.load_ns);
    EXPECT_EQ(got.done.total_ns, want.done.total_ns);
    ASSERT_EQ(got.done.embeddings.size(), want.done.embeddings.size());
    for (size_t i = 0; i < want.done.embeddings.size(); ++i) {
        expect_same_floats(got.done.embeddings[i], want.done.embeddings[i]);
    }
    expect_same_logprobs(got.logprobs, want.logprobs);
}

LoadedInfo full_loaded() {
    LoadedInfo info;
    info.name               = "qwen:0.5b";
    info.digest             = "sha256:feed";
    info.size_bytes         = uint64_t(5) << 32;
    info.context_length     = 32768;
    info.parallel           = 4;
    info.expires_at         = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::nanoseconds(1'700'000'000'123'456'789)));
    info.family             = "qwen2";
    info.parameter_size     = "494M";
    info.quantization_level = "Q4_K_M";
    info.memory_owner       = 42;
    info.threads            = 8;
    info.threads_batch      = 16;
    info.draft_threads      = 2;
    info.kv_cache_type      = "q8_0";
    info.running            = 3;
    info.queued             = 5;
    info.live               = {101, 102, 103, 104, 105, 106, 109, {0, 107, 108}};
    return info;
}

void expect_same_loaded(const LoadedInfo & got, const LoadedInfo & want) {
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.digest, want.digest);
    EXPECT_EQ(got.size_bytes, want.size_bytes);
    EXPECT_EQ(got.context_length, want.context_length);
    EXPECT_EQ(got.parallel, want.parallel);
    EXPECT_EQ(got.expires_at, want.expires_at);
    EXPECT_EQ(got.family, want.family);
    EXPECT_EQ(got.parameter_size, want.parameter_size);
    EXPECT_EQ(got.quantization_level, want.quantization_level);
    EXPECT_EQ(got.memory_owner, want.memory_owner);
    EXPECT_EQ(got.threads, want.threads);
    EXPECT_EQ(got.threads_batch, want.threads_batch);
    EXPECT_EQ(got.draft_threads, want.draft_threads);
    EXPECT_EQ(got.kv_cache_type, want.kv_cache_type);
    EXPECT_EQ(got.running, want.running);
    EXPECT_EQ(got.queued, want.queued);
    EXPECT_EQ(got.live.generated, want.live.generated);
    EXPECT_EQ(got.live.rounds, want.live.rounds);
    EXPECT_EQ(got.live.drafted, want.live.drafted);
    EXPECT_EQ(got.live.accepted, want.live.accepted);
    EXPECT_EQ(got.live.forced, want.live.forced);
    EXPECT_EQ(got.live.forced_accepted, want.live.forced_accepted);
    EXPECT_EQ(got.live.draft_decodes, want.live.draft_decodes);
    EXPECT_EQ(got.live.depth, want.live.depth);
}

LoadedInfo loaded_round_trip(const LoadedInfo & info) {
    return process::loaded_from_json(through_text(process::loaded_to_json(info)));
}

LedgerSnapshot full_ledger() {
    LedgerSnapshot snap;
    for (size_t b = 0; b < specd::memory::bucket_count; ++b) snap.buckets[b] = (b + 1) * 1000 + b;
    snap.buckets[0] = size_t(3) << 33; // past 32 bits
    snap.total      = 987654321;
    specd::memory::ModelBytes model;
    model.owner = {OwnerKind::model, 7, "qwen:0.5b"};
    for (size_t b = 0; b < specd::memory::bucket_count; ++b) model.buckets[b] = b * 3 + 1;
    model.total = 4242;
    model.devices["RPC0[127.0.0.1:50052]"][0] = 77;
    model.devices["RPC0[127.0.0.1:50053]"][3] = 88;
    snap.devices = model.devices;
    snap.models = {model, {{OwnerKind::model, 9, "gemma"}, {}, 0, {}}};
    for (size_t b = 0; b < specd::memory::bucket_count; ++b) {
        const auto kind = static_cast<OwnerKind>(b % specd::memory::owner_kind_count);
        snap.reservations.push_back({{kind, 100 + b, "owner " + std::to_string(b)}, static_cast<Bucket>(b), 10 * b + 5, b % 2 == 0,
                                     b == 2 ? "RPC0[127.0.0.1:50052]" : ""});
    }
    snap.owners = {{{11, 1}, {22, 20}, {33, 3}}};
    return snap;
}

void expect_same_owner(const specd::memory::Owner & got, const specd::memory::Owner & want) {
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.label, want.label);
}

} // namespace

TEST(Wire, RequestWithEveryFieldSetRoundTrips) {
    const ImagePtr        shared = make_image(3, 2, 1, "sha256:shared");
    const ImagePtr        other  = make_image(1, 4, 99, "sha256:other");
    const GenerateRequest req    = full_request(shared, other);

    // Blobs already in the frame stay, and the images' indexes account for them.
    std::vector<std::string> blobs = {"unrelated"};
    const json               j     = through_text(process::request_to_json(req, blobs));
    ASSERT_EQ(blobs.size(), 3u);
    EXPECT_EQ(blobs[0], "unrelated");
    const GenerateRequest got = process::request_from_json(j, blobs);
    expect_same_request(got, req);
}

TEST(Wire, DefaultRequestRoundTrips) {
    GenerateRequest req;
    req.model.name = "tiny";
    std::vector<std::string> blobs;
    const json               j = through_text(process::request_to_json(req, blobs));
    EXPECT_TRUE(blobs.empty());
    const GenerateRequest got = process::request_from_json(j, blobs);
    expect_same_request(got, req);
    EXPECT_FALSE(got.model.draft.has_value());
    EXPECT_FALSE(got.prompt.think.has_value());
    EXPECT_FALSE(got.context.use_mmap.has_value());
    EXPECT_FALSE(got.generate.draft_fixed_k.has_value());
    EXPECT_FALSE(got.keep_alive.has_value());
    EXPECT_FALSE(got.embed.has_value());
    // A zero keep_alive (unload now) is not the same as none.
    req.keep_alive = std::chrono::nanoseconds(0);
    EXPECT_EQ(request_round_trip(req).keep_alive, std::chrono::nanoseconds(0));
    req.keep_alive = std::chrono::nanoseconds(-1); // forever
    EXPECT_EQ(request_round_trip(req).keep_alive, std::chrono::nanoseconds(-1));
}

TEST(Wire, SharedImageIsWrittenOnceAndComesBackShared) {
    const ImagePtr           shared = make_image(2, 2, 5, "sha256:shared");
    const ImagePtr           other  = make_image(2, 1, 9, "sha256:other");
    const GenerateRequest    req    = full_request(shared, other);
    std::vector<std::string> blobs;
    const json               j = through_text(process::request_to_json(req, blobs));
    EXPECT_EQ(blobs.size(), 2u); // shared appears three times, other once

    const GenerateRequest got = process::request_from_json(j, blobs);
    const PromptInput &   p   = got.prompt;
    ASSERT_EQ(p.images.size(), 1u);
    ASSERT_EQ(p.messages.size(), 2u);
    ASSERT_EQ(p.messages[0].images.size(), 1u);
    ASSERT_EQ(p.messages[1].images.size(), 2u);
    EXPECT_EQ(p.messages[0].images[0].get(), p.images[0].get());
    EXPECT_EQ(p.messages[1].images[1].get(), p.images[0].get());
    EXPECT_NE(p.messages[1].images[0].get(), p.images[0].get());
    expect_same_image(p.images[0], shared);
    expect_same_image(p.messages[1].images[0], other);
}

TEST(Wire, ImageBlobsAreChecked) {
    const GenerateRequest    req = full_request(make_image(3, 2, 1, "a"), make_image(1, 4, 2, "b"));
    std::vector<std::string> blobs;
    const json               j = through_text(process::request_to_json(req, blobs));
    ASSERT_EQ(blobs.size(), 2u);
    ASSERT_NO_THROW(process::request_from_json(j, blobs));

    std::vector<std::string> short_blob = blobs;
    short_blob[0].pop_back();
    EXPECT_THROW(process::request_from_json(j, short_blob), std::runtime_error);
    std::vector<std::string> long_blob = blobs;
    long_blob[1].push_back('x');
    EXPECT_THROW(process::request_from_json(j, long_blob), std::runtime_error);
    EXPECT_THROW(process::request_from_json(j, {blobs[0]}), std::runtime_error); // index past the blobs

    json bad_index = j;
    bad_index["prompt"]["images"].at(0) = 5; // no such image in the table
    EXPECT_THROW(process::request_from_json(bad_index, blobs), std::runtime_error);
    json negative = j;
    negative["images"].at(0)["width"] = -3;
    EXPECT_THROW(process::request_from_json(negative, blobs), std::runtime_error);
}

TEST(Wire, RequestFieldsAreChecked) {
    const GenerateRequest    req = full_request(make_image(1, 1, 1, "a"), make_image(1, 1, 2, "b"));
    std::vector<std::string> blobs;
    const json               j = through_text(process::request_to_json(req, blobs));

    const auto error_of = [&](const json & bad) -> std::string {
        try {
            process::request_from_json(bad, blobs);
        } catch (const std::runtime_error & e) {
            return e.what();
        }
        return "(no error)";
    };
    json missing = j;
    missing["generate"]["sampling"].erase("top_k");
    EXPECT_NE(error_of(missing).find("top_k"), std::string::npos) << error_of(missing);
    json mistyped = j;
    mistyped["load_only"] = 1;
    EXPECT_NE(error_of(mistyped).find("load_only"), std::string::npos) << error_of(mistyped);
    json fraction = j;
    fraction["generate"]["num_keep"] = 2.5;
    EXPECT_NE(error_of(fraction).find("num_keep"), std::string::npos) << error_of(fraction);
    json too_big = j;
    too_big["context"]["num_ctx"] = int64_t(1) << 40;
    EXPECT_NE(error_of(too_big).find("num_ctx"), std::string::npos) << error_of(too_big);
    json unknown_kind = j;
    unknown_kind["prompt"]["kind"] = "completion";
    EXPECT_NE(error_of(unknown_kind).find("completion"), std::string::npos) << error_of(unknown_kind);
    json bad_bytes = j;
    bad_bytes["model"]["projector"] = {{"base64", "not base64!"}};
    EXPECT_NE(error_of(bad_bytes).find("projector"), std::string::npos) << error_of(bad_bytes);
}

TEST(Wire, TextEventWithLogprobsRoundTrips) {
    Event e;
    e.kind = Event::Kind::text;
    e.text = "Hello \xe2\x82"; // a piece may end inside a character
    for (float f : k_awkward_floats) {
        e.logprobs.push_back({"tok\xff", f, {{"alt", -f}, {"\xe2", f * 0.5f}}});
    }
    e.logprobs.push_back({"never", -k_inf, {{"nan", std::numeric_limits<float>::quiet_NaN()}, {"inf", k_inf}}});
    const Event got = event_round_trip(e);
    expect_same_event(got, e);
    EXPECT_EQ(got.kind, Event::Kind::text);
}

TEST(Wire, DoneEventWithEveryCounterRoundTrips) {
    const Event e = full_done_event();
    std::vector<std::string> blobs;
    const json               j = through_text(process::event_to_json(e, blobs));
    EXPECT_EQ(blobs.size(), 1u); // every embedding in one blob
    const Event got = process::event_from_json(j, blobs);
    expect_same_event(got, e);

    // The blob must hold exactly the floats the sizes say.
    std::vector<std::string> short_blob = blobs;
    short_blob[0].resize(short_blob[0].size() - 4);
    EXPECT_THROW(process::event_from_json(j, short_blob), std::runtime_error);
    std::vector<std::string> long_blob = blobs;
    long_blob[0].append(4, '\0');
    EXPECT_THROW(process::event_from_json(j, long_blob), std::runtime_error);
}

TEST(Wire, TextAndErrorEventsCarryNoDonePart) {
    // A text event goes out per token: its (default) done part stays off the wire.
    Event e;
    e.kind = Event::Kind::text;
    e.text = "piece";
    std::vector<std::string> blobs;
    const json               j = process::event_to_json(e, blobs);
    EXPECT_TRUE(j.at("done").is_null());
    EXPECT_TRUE(blobs.empty());
    EXPECT_LT(j.dump().size(), 120u) << j.dump();
    expect_same_event(process::event_from_json(j, blobs), e);
}

TEST(Wire, DoneEventOfEachReasonRoundTrips) {
    for (DoneReason reason : {DoneReason::stop, DoneReason::length, DoneReason::load, DoneReason::unload}) {
        Event e;
        e.kind               = Event::Kind::done;
        e.done.result.reason = reason;
        e.done.embeddings    = {{0.1f, -3.4e-38f}};
        expect_same_event(event_round_trip(e), e);
    }
}

TEST(Wire, ErrorEventOfEachKindRoundTrips) {
    for (ErrorKind kind : {ErrorKind::bad_request, ErrorKind::not_found, ErrorKind::busy, ErrorKind::cancelled,
                           ErrorKind::upstream, ErrorKind::internal}) {
        Event e;
        e.kind  = Event::Kind::error;
        e.text  = "failed: " + std::to_string(int(kind));
        e.error = kind;
        const Event got = event_round_trip(e);
        expect_same_event(got, e);
        EXPECT_EQ(got.error, kind);
    }
}

TEST(Wire, FloatsAsJsonNumbersComeBackBitForBit) {
    // What the header claims of nlohmann: a finite float's double prints in text that reads
    // back the same; inf and nan would print as null, hence their names.
    for (float f : k_awkward_floats) {
        const json back = json::parse(json(f).dump());
        ASSERT_TRUE(back.is_number()) << f;
        EXPECT_EQ(bits(back.get<float>()), bits(f)) << f;
    }
    EXPECT_EQ(json(k_inf).dump(), "null");
}

TEST(Wire, LoadedInfoRoundTrips) {
    LoadedInfo info = full_loaded();
    expect_same_loaded(loaded_round_trip(info), info);

    info.expires_at = std::nullopt;
    const LoadedInfo got = loaded_round_trip(info);
    EXPECT_FALSE(got.expires_at.has_value());
    expect_same_loaded(got, info);
}

TEST(Wire, LedgerSnapshotRoundTrips) {
    const LedgerSnapshot snap = full_ledger();
    const LedgerSnapshot got  = process::ledger_from_json(through_text(process::ledger_to_json(snap)));

    EXPECT_EQ(got.buckets, snap.buckets);
    EXPECT_EQ(got.total, snap.total);
    EXPECT_EQ(got.devices, snap.devices);
    ASSERT_EQ(got.models.size(), snap.models.size());
    for (size_t i = 0; i < snap.models.size(); ++i) {
        expect_same_owner(got.models[i].owner, snap.models[i].owner);
        EXPECT_EQ(got.models[i].buckets, snap.models[i].buckets);
        EXPECT_EQ(got.models[i].total, snap.models[i].total);
        EXPECT_EQ(got.models[i].devices, snap.models[i].devices);
    }
    ASSERT_EQ(got.reservations.size(), snap.reservations.size());
    for (size_t i = 0; i < snap.reservations.size(); ++i) {
        expect_same_owner(got.reservations[i].owner, snap.reservations[i].owner);
        EXPECT_EQ(got.reservations[i].bucket, snap.reservations[i].bucket);
        EXPECT_EQ(got.reservations[i].bytes, snap.reservations[i].bytes);
        EXPECT_EQ(got.reservations[i].owner_open, snap.reservations[i].owner_open);
        EXPECT_EQ(got.reservations[i].device, snap.reservations[i].device);
    }
    for (size_t k = 0; k < specd::memory::owner_kind_count; ++k) {
        EXPECT_EQ(got.owners[k].created, snap.owners[k].created);
        EXPECT_EQ(got.owners[k].closed, snap.owners[k].closed);
    }
}

TEST(Wire, LedgerNamesAreChecked) {
    const json j = through_text(process::ledger_to_json(full_ledger()));
    EXPECT_EQ(j["buckets"]["kv_draft"], 3002); // enums travel by name
    EXPECT_EQ(j["reservations"].at(1)["bucket"], "kv_target");

    json unknown_bucket = j;
    unknown_bucket["buckets"]["vram"] = 1;
    EXPECT_THROW(process::ledger_from_json(unknown_bucket), std::runtime_error);
    json missing_bucket = j;
    missing_bucket["models"].at(0)["buckets"].erase("grammar");
    EXPECT_THROW(process::ledger_from_json(missing_bucket), std::runtime_error);
    json unknown_reservation = j;
    unknown_reservation["reservations"].at(0)["bucket"] = "bogus";
    EXPECT_THROW(process::ledger_from_json(unknown_reservation), std::runtime_error);
    json unknown_owner = j;
    unknown_owner["reservations"].at(0)["owner"]["kind"] = "tenant";
    EXPECT_THROW(process::ledger_from_json(unknown_owner), std::runtime_error);
    json unknown_counter = j;
    unknown_counter["owners"]["tenant"] = {{"created", 1}, {"closed", 0}};
    EXPECT_THROW(process::ledger_from_json(unknown_counter), std::runtime_error);
}

TEST(Wire, PromptCacheStatsRoundTrip) {
    const PromptCacheStats stats = {1u << 30, 2, 3, 4, uint64_t(5) << 40, 6, 7, 8, 9, 10};
    const PromptCacheStats got   = process::cache_stats_from_json(through_text(process::cache_stats_to_json(stats)));
    EXPECT_EQ(got.budget_bytes, stats.budget_bytes);
    EXPECT_EQ(got.bytes, stats.bytes);
    EXPECT_EQ(got.entries, stats.entries);
    EXPECT_EQ(got.tokens, stats.tokens);
    EXPECT_EQ(got.hits, stats.hits);
    EXPECT_EQ(got.misses, stats.misses);
    EXPECT_EQ(got.tokens_reused, stats.tokens_reused);
    EXPECT_EQ(got.evictions, stats.evictions);
    EXPECT_EQ(got.stores, stats.stores);
    EXPECT_EQ(got.rejected, stats.rejected);
}
