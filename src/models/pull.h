#pragma once
// Pulling a model from a registry into the store (Ollama's /api/pull).
// Invariants:
// - The manifest is parsed, with every digest validated, before any file is touched; one
//   larger than k_pull_max_manifest_bytes is refused unread.
// - Every blob is downloaded through a resumable BlobWriter (Store::resume_blob), refused as
//   soon as it grows past its declared size, and committed only once every blob of the
//   model has the digest it is named by. The manifest is written last, atomically.
// - A failed pull leaves no manifest and no blob under its final name. A broken transfer
//   keeps its partial download, which the next pull continues with a Range request; bytes
//   that fail verification are removed, with every other partial download of that pull.
#include "models/registry_ref.h"
#include "models/store.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace specd::models {

inline constexpr size_t k_pull_max_manifest_bytes = 4u << 20;

// One of Ollama's pull status lines: "pulling manifest", "pulling <12 hex>" (with digest,
// total and completed), "using existing layer sha256:<hex>" (likewise, completed == total),
// "verifying sha256 digest", "writing manifest", "success".
struct PullProgress {
    std::string status;
    std::string digest; // empty for lines about the whole model
    uint64_t    total     = 0;
    uint64_t    completed = 0;
};

// The 12 hex digits after "sha256:" that name a blob in status lines ("pulling 2af3b81862c6").
inline std::string short_digest(const std::string & digest) { return digest.substr(7, 12); }

// A line about the whole model ("success").
inline PullProgress status_line(std::string status) { return {std::move(status), "", 0, 0}; }

// A pull's options, and a push's (push.h).
struct PullOptions {
    RegistryConfig registry;
    // Every status line; throwing from it cancels the transfer (a pull keeps its partial
    // downloads).
    std::function<void(const PullProgress &)> progress;
    // Transfer lines for one blob come at most this often (its first and last always).
    std::chrono::milliseconds progress_interval{100};
};

class RegistryClient;

// A pull in two steps, so that a server can answer an unknown model or a bad manifest with
// an HTTP status before it starts streaming the download's progress.
class Pull {
  public:
    // Maps the name to its registry (specd::Error bad_request for a bad name or scheme).
    Pull(Store & store, std::string_view name, PullOptions options);
    ~Pull();

    const ModelName & name() const { return ref_.name; }

    // "pulling manifest": fetches and validates it. Throws specd::Error: not_found for a
    // model the registry does not have, internal for an unreachable registry or an invalid
    // manifest. Writes nothing.
    void fetch_manifest();

    // Downloads what the store lacks, verifies, writes the manifest, reports "success".
    // Throws specd::Error (internal for a transfer or digest failure, cancelled when the
    // progress callback threw it).
    void run();

  private:
    struct Download;

    void download(Download & d);
    void report(const PullProgress & p);

    Store &                         store_;
    PullOptions                     options_;
    RegistryRef                     ref_;
    std::unique_ptr<RegistryClient> client_;
    std::optional<Manifest>         manifest_;
};

// fetch_manifest() then run().
void pull_model(Store & store, std::string_view name, PullOptions options);

} // namespace specd::models
