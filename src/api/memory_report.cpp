#include "api/memory_report.h"

#include "memory/allocator.h"
#include "memory/process_memory.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

namespace specd::api {

namespace {

constexpr memory::Bucket k_buckets[] = {memory::Bucket::weights,      memory::Bucket::kv_target,
                                        memory::Bucket::kv_draft,     memory::Bucket::compute,
                                        memory::Bucket::prompt_cache, memory::Bucket::images,
                                        memory::Bucket::grammar,      memory::Bucket::request};
constexpr memory::OwnerKind k_kinds[] = {memory::OwnerKind::model, memory::OwnerKind::request,
                                         memory::OwnerKind::cache};

json cache_json(const memory::PromptCacheStats & c) {
    return {{"budget_bytes", c.budget_bytes}, {"bytes", c.bytes},       {"entries", c.entries},
            {"tokens", c.tokens},             {"hits", c.hits},         {"misses", c.misses},
            {"tokens_reused", c.tokens_reused}, {"evictions", c.evictions}, {"stores", c.stores},
            {"rejected", c.rejected}};
}

// The allocator's counts by name, in the order /api/debug/memory and /metrics show them;
// counts this allocator does not report are left out.
std::vector<std::pair<const char *, size_t>> allocator_counts(const memory::AllocatorStats & a) {
    std::vector<std::pair<const char *, size_t>> out;
    const std::pair<const char *, const std::optional<size_t> &> all[] = {
        {"allocated", a.allocated}, {"active", a.active},     {"free", a.free},         {"resident", a.resident},
        {"mapped", a.mapped},       {"retained", a.retained}, {"metadata", a.metadata}, {"releasable", a.releasable}};
    for (const auto & [name, value] : all) {
        if (value) out.emplace_back(name, *value);
    }
    return out;
}

json allocator_json(const memory::AllocatorStats & a) {
    json out = {{"name", a.name}, {"version", a.version}};
    for (const auto & [name, value] : allocator_counts(a)) out[std::string(name) + "_bytes"] = value;
    if (a.mmap_threshold) out["mmap_threshold_bytes"] = *a.mmap_threshold;
    return out;
}

} // namespace

json bucket_json(const memory::BucketBytes & buckets) {
    json   out   = json::object();
    size_t total = 0;
    for (memory::Bucket b : k_buckets) {
        out[memory::bucket_name(b)] = buckets[static_cast<size_t>(b)];
        total += buckets[static_cast<size_t>(b)];
    }
    out["total"] = total;
    return out;
}

memory::BucketBytes model_buckets(const memory::LedgerSnapshot & ledger, uint64_t owner_id) {
    for (const auto & mb : ledger.models) {
        if (mb.owner.id == owner_id) return mb.buckets;
    }
    return {};
}

json devices_json(const memory::BucketBytes & all, const memory::DeviceBuckets & elsewhere) {
    memory::BucketBytes host = all;
    json                out  = json::array();
    for (const auto & [name, buckets] : elsewhere) {
        for (size_t i = 0; i < memory::bucket_count; ++i) host[i] -= std::min(host[i], buckets[i]);
        json d = bucket_json(buckets);
        d["name"] = name;
        out.push_back(std::move(d));
    }
    json h = bucket_json(host);
    h["name"] = k_host_device;
    out.insert(out.begin(), std::move(h));
    return out;
}

json model_devices_json(const memory::LedgerSnapshot & ledger, uint64_t owner_id) {
    for (const auto & mb : ledger.models) {
        if (mb.owner.id == owner_id) return devices_json(mb.buckets, mb.devices);
    }
    return devices_json({}, {});
}

uint64_t offloaded_bytes(const memory::LedgerSnapshot & ledger, uint64_t owner_id) {
    uint64_t total = 0;
    for (const auto & mb : ledger.models) {
        if (mb.owner.id != owner_id) continue;
        for (const auto & [name, buckets] : mb.devices) {
            for (size_t b : buckets) total += b;
        }
    }
    return total;
}

json memory_debug_json(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache) {
    json owners = json::object();
    for (memory::OwnerKind k : k_kinds) {
        const auto & c = ledger.owners[static_cast<size_t>(k)];
        owners[memory::owner_kind_name(k)] = {{"created", c.created}, {"closed", c.closed}, {"open", c.open()}};
    }
    json reservations = json::array();
    bool request_zero = true;
    for (const auto & r : ledger.reservations) {
        if (r.owner.kind == memory::OwnerKind::request) request_zero = false;
        reservations.push_back({{"owner", {{"kind", memory::owner_kind_name(r.owner.kind)},
                                           {"id", r.owner.id},
                                           {"label", r.owner.label},
                                           {"open", r.owner_open}}},
                                {"bucket", memory::bucket_name(r.bucket)},
                                {"bytes", r.bytes},
                                {"device", r.device.empty() ? std::string(k_host_device) : r.device}});
    }
    json models = json::array();
    for (const auto & m : ledger.models) {
        models.push_back({{"owner", m.owner.id}, {"name", m.owner.label}, {"memory", bucket_json(m.buckets)},
                          {"devices", devices_json(m.buckets, m.devices)}});
    }
    return {{"buckets", bucket_json(ledger.buckets)},
            {"devices", devices_json(ledger.buckets, ledger.devices)},
            {"request_buckets_zero", request_zero},
            {"resident_bytes", memory::resident_bytes_with_children()},
            {"allocator", allocator_json(memory::allocator_stats())},
            {"owners", owners},
            {"models", models},
            {"prompt_cache", cache_json(cache)},
            {"reservations", reservations}};
}

std::string memory_metrics(const memory::LedgerSnapshot & ledger, const memory::PromptCacheStats & cache) {
    std::ostringstream out;
    out << "# HELP specd_memory_bytes Bytes held, by ledger bucket.\n# TYPE specd_memory_bytes gauge\n";
    for (memory::Bucket b : k_buckets) {
        out << "specd_memory_bytes{bucket=\"" << memory::bucket_name(b) << "\"} " << ledger.buckets[static_cast<size_t>(b)]
            << "\n";
    }
    out << "# HELP specd_device_memory_bytes Bytes held, by device (CPU is the host) and ledger bucket.\n"
        << "# TYPE specd_device_memory_bytes gauge\n";
    for (const json & d : devices_json(ledger.buckets, ledger.devices)) {
        for (memory::Bucket b : k_buckets) {
            // Label values are ggml's device names: no quote or backslash in them to escape.
            out << "specd_device_memory_bytes{device=\"" << d["name"].get<std::string>() << "\",bucket=\""
                << memory::bucket_name(b) << "\"} " << d[memory::bucket_name(b)].get<uint64_t>() << "\n";
        }
    }
    for (const char * what : {"created", "closed"}) {
        out << "# HELP specd_memory_owners_" << what << "_total Ledger owners " << what << ", by kind.\n"
            << "# TYPE specd_memory_owners_" << what << "_total counter\n";
        for (memory::OwnerKind k : k_kinds) {
            const auto & c = ledger.owners[static_cast<size_t>(k)];
            out << "specd_memory_owners_" << what << "_total{kind=\"" << memory::owner_kind_name(k) << "\"} "
                << (what[1] == 'r' ? c.created : c.closed) << "\n";
        }
    }
    out << "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
        << "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes " << memory::resident_bytes_with_children() << "\n";
    const memory::AllocatorStats alloc = memory::allocator_stats();
    out << "# HELP specd_allocator_info The malloc this server runs on.\n# TYPE specd_allocator_info gauge\n"
        << "specd_allocator_info{name=\"" << alloc.name << "\",version=\"" << alloc.version << "\"} 1\n"
        << "# HELP specd_allocator_bytes What malloc reports about the memory it manages, by kind (docs/memory.md).\n"
        << "# TYPE specd_allocator_bytes gauge\n";
    for (const auto & [name, value] : allocator_counts(alloc)) {
        out << "specd_allocator_bytes{kind=\"" << name << "\"} " << value << "\n";
    }
    const auto gauge = [&](const char * name, const char * help, uint64_t v) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n" << name << " " << v << "\n";
    };
    const auto counter = [&](const char * name, const char * help, uint64_t v) {
        out << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v << "\n";
    };
    gauge("specd_prompt_cache_budget_bytes", "The prompt cache's byte budget (0: disabled).", cache.budget_bytes);
    gauge("specd_prompt_cache_bytes", "Bytes of saved sequence states in the prompt cache.", cache.bytes);
    gauge("specd_prompt_cache_entries", "Saved sequence states in the prompt cache.", cache.entries);
    gauge("specd_prompt_cache_tokens", "Tokens held by the saved states.", cache.tokens);
    counter("specd_prompt_cache_hits_total", "Prompts that restored a saved state.", cache.hits);
    counter("specd_prompt_cache_misses_total", "Prompts that found no saved state worth restoring.", cache.misses);
    counter("specd_prompt_cache_tokens_reused_total", "Prompt tokens restored instead of evaluated.",
            cache.tokens_reused);
    counter("specd_prompt_cache_evictions_total", "Saved states evicted to stay within the budget.", cache.evictions);
    return out.str();
}

} // namespace specd::api
