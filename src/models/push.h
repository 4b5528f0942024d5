#pragma once
// Pushing a stored model to a registry (Ollama's /api/push), the reverse of pull.h.
// Invariants:
// - The model's name says where it goes (registry_ref: `host[:port]/namespace/model:tag`);
//   its manifest is sent byte for byte as stored, so the registry's digest of the model is
//   the local one.
// - A blob the registry already has (HEAD 200) is never read or sent again; that is what
//   makes a second push of an interrupted one continue where it stopped.
// - Every blob that is sent is hashed as it is read from the store, and its last chunk goes
//   out only once the digest of everything read matches the manifest: a corrupted local
//   blob fails the push, and the registry never receives a whole blob of it.
// - The manifest goes last, only after every blob is in the registry.
// - An upload whose connection breaks (or that the registry fails with a 5xx) is started
//   over once, from the first byte, in a new upload session.
#include "models/pull.h"
#include "models/registry_ref.h"
#include "models/store.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace specd::models {

// One of Ollama's push status lines: "retrieving manifest", "pushing <12 hex>" (with digest,
// total and completed; completed == total at once for a blob the registry has),
// "pushing manifest", "success". The same fields as a pull's.
using PushProgress = PullProgress;

using PushOptions = PullOptions;

class RegistryClient;

// A push in two steps, so that a server can answer an unknown model, a bad name or an
// unreachable registry with an HTTP status before it starts streaming progress.
class Push {
  public:
    // Maps the name to its registry (specd::Error bad_request for a bad name or scheme).
    Push(Store & store, std::string_view name, PushOptions options);
    ~Push();

    const ModelName & name() const { return ref_.name; }

    // "retrieving manifest": reads the local manifest (specd::Error not_found for an
    // unknown model), checks that every blob is in the store with its declared size
    // (internal otherwise), and asks the registry which blobs it has (upstream when it
    // cannot be reached or answers with an error).
    void prepare();

    // Uploads what the registry lacks, then the manifest; reports "success". Throws
    // specd::Error: upstream for the registry's failures, internal for a corrupt local blob,
    // cancelled when the progress callback threw it.
    void run();

  private:
    struct Blob {
        Layer layer;
        bool  in_registry = false;
    };

    void upload(const Layer & layer);
    void report(const PushProgress & p);

    Store &                         store_;
    PushOptions                     options_;
    RegistryRef                     ref_;
    std::unique_ptr<RegistryClient> client_;
    std::string                     manifest_bytes_;
    std::vector<Blob>               blobs_; // layers then the config, each digest once
};

// prepare() then run().
void push_model(Store & store, std::string_view name, PushOptions options);

} // namespace specd::models
