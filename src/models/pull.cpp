#include "models/pull.h"

#include "core/error.h"
#include "models/registry_client.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace specd::models {

namespace {

// Bytes that are not what the manifest says: nothing of this pull is worth keeping.
struct Tampered : Error {
    explicit Tampered(const std::string & message) : Error(ErrorKind::internal, message) {}
};

} // namespace

struct Pull::Download {
    const Layer *             layer = nullptr;
    std::optional<BlobWriter> writer; // nullopt: the store has the blob
};

Pull::Pull(Store & store, std::string_view name, PullOptions options) :
    store_(store), options_(std::move(options)), ref_(registry_ref(name, options_.registry)),
    client_(std::make_unique<RegistryClient>(ref_)) {}

Pull::~Pull() = default;

void Pull::report(const PullProgress & p) {
    if (options_.progress) {
        options_.progress(p);
    }
}

void Pull::fetch_manifest() {
    report(status_line("pulling manifest"));
    const std::string bytes = client_->get_manifest(k_pull_max_manifest_bytes);
    try {
        manifest_ = parse_manifest(bytes);
    } catch (const std::invalid_argument & e) {
        throw Error(ErrorKind::internal, "the registry's manifest of " + ref_.name.display() + " is invalid: " + e.what());
    }
}

void Pull::run() {
    if (!manifest_) {
        throw Error(ErrorKind::internal, "pull: the manifest was not fetched");
    }
    // Ollama's order: the layers, then the config. A digest listed twice is fetched once.
    std::vector<Layer>    blobs;
    std::set<std::string> seen;
    for (const Layer & layer : manifest_->layers) {
        if (seen.insert(layer.digest).second) blobs.push_back(layer);
    }
    if (seen.insert(manifest_->config.digest).second) blobs.push_back(manifest_->config);

    // Partial downloads are locked in digest order: two pulls that share blobs then never
    // wait for each other in a cycle.
    std::vector<Download> downloads(blobs.size());
    std::vector<size_t>   order(blobs.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return blobs[a].digest < blobs[b].digest; });
    for (size_t i : order) {
        downloads[i].layer  = &blobs[i];
        if (auto w = store_.resume_blob(blobs[i].digest)) downloads[i].writer.emplace(std::move(*w));
    }

    try {
        for (auto & d : downloads) {
            if (d.writer) {
                download(d);
            } else {
                report({"using existing layer " + d.layer->digest, d.layer->digest, d.layer->size, d.layer->size});
            }
        }
    } catch (const Tampered &) {
        for (auto & d : downloads) {
            if (d.writer) d.writer->discard();
        }
        throw;
    }

    report(status_line("verifying sha256 digest"));
    std::vector<std::string> replaced;
    try {
        if (auto old = store_.read_manifest(ref_.name)) {
            replaced.push_back(old->config.digest);
            for (const auto & l : old->layers) replaced.push_back(l.digest);
        }
    } catch (const StoreError &) {
        // A corrupt old manifest is replaced; its blobs wait for an age-based sweep.
    }
    {
        // No collection between publishing the blobs and the manifest that references them.
        Store::WriteGuard guard(store_);
        for (auto & d : downloads) {
            if (d.writer) d.writer->commit(d.layer->digest);
        }
        report(status_line("writing manifest"));
        store_.write_manifest(ref_.name, *manifest_);
    }
    store_.collect_replaced(replaced);
    report(status_line("success"));
}

void Pull::download(Download & d) {
    const Layer &     layer  = *d.layer;
    BlobWriter &      w      = *d.writer;
    const std::string status = "pulling " + short_digest(layer.digest);
    for (int attempt = 0;; ++attempt) {
        if (w.size() > layer.size) {
            w.restart(); // not a prefix of this blob
        }
        const bool resumed = w.size() > 0;
        auto       last    = std::chrono::steady_clock::now();
        report({status, layer.digest, layer.size, w.size()});
        bool callback_threw = false;
        try {
            if (w.size() < layer.size) {
                client_->get_blob(
                    layer.digest, w.size(),
                    [&](bool from_zero) {
                        if (from_zero) w.restart();
                    },
                    [&](const char * data, size_t n) {
                        try {
                            if (n > layer.size - w.size()) {
                                throw Tampered("blob " + layer.digest + " is larger than the " + std::to_string(layer.size) +
                                               " bytes its manifest declares");
                            }
                            w.write(data, n);
                            const auto now = std::chrono::steady_clock::now();
                            if (now - last >= options_.progress_interval && w.size() < layer.size) {
                                last = now;
                                report({status, layer.digest, layer.size, w.size()});
                            }
                        } catch (...) {
                            callback_threw = true;
                            throw;
                        }
                    });
            }
        } catch (const Error & e) {
            if (callback_threw || e.kind() != ErrorKind::internal) throw;
            throw Error(ErrorKind::internal, std::string(e.what()) + " (" + std::to_string(w.size()) + " of " +
                                                 std::to_string(layer.size) + " bytes kept; pull again to resume)");
        }
        if (w.size() < layer.size) {
            throw Error(ErrorKind::internal, "the download of " + layer.digest + " ended early (" + std::to_string(w.size()) +
                                                 " of " + std::to_string(layer.size) + " bytes kept; pull again to resume)");
        }
        report({status, layer.digest, layer.size, layer.size});
        const std::string got = w.digest();
        if (got == layer.digest) {
            return;
        }
        if (resumed && attempt == 0) {
            w.restart(); // the kept bytes may be what is wrong: once more from the start
            continue;
        }
        throw Tampered("digest mismatch for " + layer.digest + ": the registry sent bytes whose digest is " + got);
    }
}

void pull_model(Store & store, std::string_view name, PullOptions options) {
    Pull pull(store, name, std::move(options));
    pull.fetch_manifest();
    pull.run();
}

} // namespace specd::models
