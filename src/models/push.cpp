#include "models/push.h"

#include "core/error.h"
#include "models/registry_client.h"

#include <algorithm>
#include <fstream>
#include <set>

namespace specd::models {

namespace {

Error corrupt_blob(const std::string & digest, const std::string & why) {
    return Error(ErrorKind::internal, "blob " + digest + " in the model store is corrupt (" + why +
                                          "); nothing of it was pushed as complete. Pull or create the model again");
}

} // namespace

Push::Push(Store & store, std::string_view name, PushOptions options) :
    store_(store), options_(std::move(options)), ref_(registry_ref(name, options_.registry)),
    client_(std::make_unique<RegistryClient>(ref_)) {}

Push::~Push() = default;

void Push::report(const PushProgress & p) {
    if (options_.progress) {
        options_.progress(p);
    }
}

void Push::prepare() {
    report(status_line("retrieving manifest"));
    auto bytes = store_.read_manifest_bytes(ref_.name);
    if (!bytes) {
        throw Error(ErrorKind::not_found, "model \"" + ref_.name.display() + "\" not found");
    }
    Manifest manifest;
    try {
        manifest = parse_manifest(*bytes);
    } catch (const std::invalid_argument & e) {
        throw Error(ErrorKind::internal, "the manifest of " + ref_.name.display() + " is corrupt: " + e.what());
    }
    manifest_bytes_ = std::move(*bytes);

    // Ollama's order: the layers, then the config. A digest listed twice is sent once.
    std::set<std::string> seen;
    for (const Layer & layer : manifest.layers) {
        if (seen.insert(layer.digest).second) blobs_.push_back({layer});
    }
    if (seen.insert(manifest.config.digest).second) blobs_.push_back({manifest.config});

    for (const Blob & b : blobs_) {
        std::error_code ec;
        const auto      size = std::filesystem::file_size(store_.blob_path(b.layer.digest), ec);
        if (ec) {
            throw Error(ErrorKind::internal, "blob " + b.layer.digest + " of " + ref_.name.display() +
                                                 " is missing from the model store");
        }
        if (size != b.layer.size) {
            throw corrupt_blob(b.layer.digest, std::to_string(size) + " bytes where its manifest says " +
                                                   std::to_string(b.layer.size));
        }
    }
    for (Blob & b : blobs_) {
        b.in_registry = client_->has_blob(b.layer.digest);
    }
}

void Push::run() {
    for (const Blob & b : blobs_) {
        if (b.in_registry) {
            report({"pushing " + short_digest(b.layer.digest), b.layer.digest, b.layer.size, b.layer.size});
        } else {
            upload(b.layer);
        }
    }
    report(status_line("pushing manifest"));
    client_->put_manifest(manifest_bytes_);
    report(status_line("success"));
}

void Push::upload(const Layer & layer) {
    const std::string status = "pushing " + short_digest(layer.digest);
    const auto        path   = store_.blob_path(layer.digest);
    for (int attempt = 0;; ++attempt) {
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            throw Error(ErrorKind::internal, "blob " + layer.digest + " is missing from the model store");
        }
        // `read` is what was read and hashed; a resend from the start (a redirected PUT)
        // hashes again from zero.
        Sha256   hash;
        uint64_t read = 0;
        auto     last = std::chrono::steady_clock::now();
        report({status, layer.digest, layer.size, 0});
        if (layer.size == 0 && sha256_digest("") != layer.digest) {
            throw corrupt_blob(layer.digest, "empty, and the digest of no bytes is another");
        }
        const std::string location = client_->start_upload();
        bool              retry    = false;
        try {
            client_->put_blob(
                location, layer.digest, layer.size,
                [&](uint64_t offset, char * buf, size_t max) -> size_t {
                    if (offset != read) {
                        if (offset != 0) {
                            throw Error(ErrorKind::internal, "upload of " + layer.digest + ": the HTTP client asked for "
                                                                 "bytes out of order");
                        }
                        hash.reset();
                        read = 0;
                        in.clear();
                        in.seekg(0);
                    }
                    const size_t n = size_t(std::min<uint64_t>(max, layer.size - read));
                    in.read(buf, std::streamsize(n));
                    if (size_t(in.gcount()) != n) {
                        throw corrupt_blob(layer.digest, "shorter than its manifest says");
                    }
                    hash.update(buf, n);
                    read += n;
                    // The last chunk is handed over only once every byte read is verified.
                    if (read == layer.size) {
                        if (const std::string got = hash.finish_digest(); got != layer.digest) {
                            throw corrupt_blob(layer.digest, "its bytes hash to " + got);
                        }
                    }
                    const auto now = std::chrono::steady_clock::now();
                    if (now - last >= options_.progress_interval && read < layer.size) {
                        last = now;
                        report({status, layer.digest, layer.size, read});
                    }
                    return n;
                },
                retry);
        } catch (const Error &) {
            if (!retry || attempt > 0) throw;
            continue; // the connection broke: once more, in a new session, from the first byte
        }
        report({status, layer.digest, layer.size, layer.size});
        return;
    }
}

void push_model(Store & store, std::string_view name, PushOptions options) {
    Push push(store, name, std::move(options));
    push.prepare();
    push.run();
}

} // namespace specd::models
