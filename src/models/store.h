#pragma once
// The model store on disk, in Ollama's layout (so an Ollama models directory works too):
//   <root>/blobs/sha256-<hex>                            content-addressed, immutable
//   <root>/manifests/<host>/<namespace>/<model>/<tag>    JSON manifest naming the blobs
// Invariants:
// - Every write goes to a ".tmp-*" file in the target's directory and is renamed into
//   place after an fsync, so a crash leaves either the old file or the new one. Leftover
//   temp files are invisible to readers and removed by the next Store opened on the root
//   (a pull's partial download, resume_blob(), after a week without being touched).
// - Blobs are written before the manifest that references them; garbage collection runs
//   only while no writer in this process is between the two (see WriteGuard).
// - Digests and names are validated before they become paths; error messages name files by
//   their base name only, never by an absolute path.
#include "core/error.h"
#include "models/digest.h"
#include "models/manifest.h"
#include "models/model_name.h"
#include "models/modelfile.h"
#include "models/parameters.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specd::models {

// Kinds: bad_request (invalid input: a bad digest, a non-GGUF file, an unsupported
// instruction), not_found (unknown model or missing FROM file), internal (I/O failure, a
// corrupt store).
struct StoreError : specd::Error {
    using specd::Error::Error;
};

struct StoreEntry {
    ModelName                             name;
    std::string                           digest; // of the manifest bytes: changes with the model
    uint64_t                              size = 0;
    std::chrono::system_clock::time_point modified;
    ModelConfig                           config; // empty fields when the config blob is unreadable
};

// Everything the server needs to load and run a model, read from its manifest and blobs.
struct ResolvedModel {
    ModelName                            name;
    std::string                          digest; // of the manifest
    Manifest                             manifest;
    ModelConfig                          config;
    std::filesystem::path                model_gguf;
    std::optional<std::filesystem::path> projector;
    std::optional<std::filesystem::path> draft;
    std::vector<std::filesystem::path>   adapters; // LoRA GGUFs, in manifest order
    Parameters                           params;
    // Keys of the params layer this server does not know (models pulled by Ollama carry a
    // few, e.g. num_gpu). Not applied; the caller decides whether to warn or refuse.
    std::vector<std::string>             unsupported_params;
    std::string                          system;
    std::optional<std::string>           template_text;
    std::vector<std::string>             licenses;
    std::vector<ModelfileMessage>        messages;

    // A Modelfile that recreates the model, FROM naming the blob files (as `ollama show
    // --modelfile` does).
    Modelfile modelfile() const;
};

struct CreateOptions {
    // TEMPLATE is parsed but only stored when the caller can honour it (chat templates come
    // from the GGUF for now); otherwise create() rejects it.
    bool allow_template = false;
    // Parses a TEMPLATE before anything is written; throws to refuse (a 400 naming the line
    // and column). Unset: stored unchecked.
    std::function<void(const std::string & template_text)> check_template;
    // False for a create that arrives over the API: FROM/DRAFT may then only name stored
    // models or blobs in the store (uploaded through /api/blobs), never other server files.
    bool allow_local_files = true;
    // Fills the config blob's details (family, parameter count, quantization) from a GGUF's
    // header. The engine layer owns GGUF reading; unset leaves the details empty.
    std::function<ModelConfig(const std::filesystem::path & gguf)> describe;
    // Checks that a DRAFT can serve FROM (same vocabulary) before anything is written;
    // throws to refuse. Both arguments are GGUF files (a stored model's blob when the line
    // names a model). Unset: no check.
    std::function<void(const std::filesystem::path & model_gguf, const std::filesystem::path & draft_gguf)> check_draft;
    // Checks that a LoRA ADAPTER fits the model (architecture, tensor names and shapes)
    // before anything is written; throws to refuse. Unset: no check.
    std::function<void(const std::filesystem::path & model_gguf, const std::filesystem::path & adapter_gguf)> check_adapter;
    // Checks that a vision projector (the FROM line whose GGUF is a clip model) is of a type
    // the server serves and that the text model can take images; throws to refuse. Unset: no
    // check.
    std::function<void(const std::filesystem::path & projector_gguf, const std::filesystem::path & model_gguf)>
        check_projector;
    // Rewrites the model GGUF before it is stored (the API's `quantize`): reads `in`, writes
    // `out`, a temp file in the store that is removed afterwards whatever happens. It is the
    // first write of a create, so a refusal (thrown before writing) leaves nothing behind.
    // Unset: the GGUF is stored as it is.
    std::function<void(const std::filesystem::path & in, const std::filesystem::path & out)> rewrite_model;
    // The same for the draft GGUF (the API's `draft_quantize`): the DRAFT line's model, or
    // the draft inherited from FROM. Set without any draft, create is refused.
    std::function<void(const std::filesystem::path & in, const std::filesystem::path & out)> rewrite_draft;
    // Status lines in Ollama's create vocabulary ("using existing layer sha256:...", ...).
    std::function<void(const std::string & status)> progress;
};

class Store;

// Writes one blob: bytes go to a temp file while they are hashed; commit() checks the digest
// (when one is expected, as for a pull) and renames the file into place. Destroying an
// uncommitted writer removes its temp file, except a resumable one (Store::resume_blob),
// whose bytes stay for the next attempt.
class BlobWriter {
  public:
    BlobWriter(BlobWriter && other) noexcept;
    BlobWriter & operator=(BlobWriter &&) = delete;
    ~BlobWriter();

    void     write(const void * data, size_t size);
    void     write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
    // Bytes in the temp file (for a resumed writer, those found there count too).
    uint64_t size() const { return size_; }
    // "sha256:<hex>" of the bytes so far; the writer stays usable.
    std::string digest() const;
    // Drops every byte written so far (a resumed download the server will not continue).
    void        restart();
    // Removes the temp file now, resumable or not; the writer is finished.
    void        discard();

    // Returns the canonical digest. Throws StoreError(bad_request) when `expected` is given
    // and does not match (the temp file is removed).
    std::string commit(std::optional<std::string_view> expected = std::nullopt);

  private:
    friend class Store;
    BlobWriter(const Store & store, std::filesystem::path temp, int fd);

    const Store *         store_;
    std::filesystem::path temp_;
    int                   fd_;
    uint64_t              size_ = 0;
    Sha256                hash_;
    bool                  done_ = false;
    bool                  keep_ = false; // resumable: an uncommitted temp file outlives the writer
};

class Store {
  public:
    // Creates <root>/blobs and <root>/manifests when missing and removes stale temp files.
    explicit Store(std::filesystem::path root);
    Store(const Store &)             = delete;
    Store & operator=(const Store &) = delete;

    // $SPECD_MODELS, else $OLLAMA_MODELS, else $HOME/.specd/models.
    static std::filesystem::path default_root();

    const std::filesystem::path & root() const { return root_; }

    // Holds off garbage collection while alive: hold one across writing blobs and then the
    // manifest that references them. Nests; create() and copy() take one themselves.
    class WriteGuard {
      public:
        explicit WriteGuard(Store & store);
        WriteGuard(const WriteGuard &)             = delete;
        WriteGuard & operator=(const WriteGuard &) = delete;
        ~WriteGuard();

      private:
        Store & store_;
    };

    // --- blobs
    BlobWriter  begin_blob();
    // A resumable download of `digest` (validated first): bytes go to
    // blobs/.tmp-partial-sha256-<hex>, which stays when the writer is dropped uncommitted, so
    // the next call appends to what is there (those bytes are hashed again first). The file
    // is locked while the writer lives: a second writer of the same digest, in this process
    // or another, waits for the first. nullopt when the blob is stored by then.
    std::optional<BlobWriter> resume_blob(std::string_view digest);
    std::string put_blob_from_file(const std::filesystem::path & src);
    std::string put_blob_from_bytes(std::string_view bytes);
    // Validates the digest first (StoreError bad_request), then joins it to the blob dir.
    std::filesystem::path blob_path(std::string_view digest) const;
    bool                  has_blob(std::string_view digest) const;
    // A small blob's bytes (params, system, template...); larger than max_bytes is an error.
    std::string read_blob(std::string_view digest, size_t max_bytes = 16u << 20) const;

    // --- manifests
    void                    write_manifest(const ModelName & name, const Manifest & manifest);
    std::optional<Manifest> read_manifest(const ModelName & name) const;
    // The manifest's bytes as stored (a push sends them unchanged, so the registry's digest
    // of the model is the local one); nullopt when there is no such model.
    std::optional<std::string> read_manifest_bytes(const ModelName & name) const;
    std::vector<StoreEntry> list() const;
    // Deletes the manifest, then the blobs only it referenced. False when there was no model.
    // remove(), copy(), create() and collect_garbage() wait for every WriteGuard to go:
    // calling them while holding one deadlocks.
    bool remove(const ModelName & name);
    // Throws StoreError(not_found) when src does not exist. Replacing an existing dst frees
    // the blobs only the old dst used.
    void copy(const ModelName & src, const ModelName & dst);

    // Builds a model from a Modelfile. Relative FROM/DRAFT paths resolve against
    // modelfile_dir; a FROM that is not a file may name a model in the store, whose layers
    // are inherited and then overridden. Every source is checked before anything is written.
    // Replacing an existing model frees the blobs only its old version used. Returns the new
    // manifest. Must not be called while holding a WriteGuard (it may collect).
    Manifest create(const ModelName & name, const Modelfile & modelfile,
                    const std::filesystem::path & modelfile_dir, const CreateOptions & options = {});

    // Throws StoreError: not_found for an unknown model, internal for a missing blob.
    ResolvedModel resolve(const ModelName & name) const;

    // Removes blobs no manifest references and that are older than `grace` (blobs younger
    // than that may belong to another process's write in progress). Returns how many.
    size_t collect_garbage(std::chrono::seconds grace = std::chrono::minutes(15));

  private:
    friend class BlobWriter;
    friend class Pull; // frees the blobs of the manifest a pull replaces (collect_replaced)
    friend class StoreCreate; // one create(): put_file/put_bytes, temp files in blobs_dir_

    std::optional<std::filesystem::path> find_manifest_file(const ModelName & name) const;
    // The config blob's details; empty when it cannot be read (they are cosmetic).
    ModelConfig                          read_config(const Manifest & manifest) const;
    // put_blob_* that also say whether the blob was already stored (for create's progress).
    std::string put_bytes(std::string_view bytes, bool * existed);
    std::string put_file(const std::filesystem::path & src, bool * existed);
    // The digests name's manifest references (its config and layers); empty when there is
    // no manifest or it cannot be read.
    std::vector<std::string> referenced_digests(const ModelName & name) const;
    // Collects the blobs of a replaced manifest that nothing references any more.
    void collect_replaced(const std::vector<std::string> & old_digests);
    // Runs fn as the only collector while no WriteGuard is held.
    template <typename Fn> auto exclusive(Fn && fn);
    std::vector<std::pair<ModelName, std::filesystem::path>> manifest_files() const;
    void remove_stale_temp_files() const;
    // Deletes unreferenced blobs: those in `freed` whatever their age, others older than
    // grace. Caller holds the GC lock.
    size_t collect_locked(const std::vector<std::string> & freed, std::chrono::seconds grace);

    std::filesystem::path root_;
    std::filesystem::path blobs_dir_;
    std::filesystem::path manifests_dir_;

    std::mutex              gc_mutex_;
    std::condition_variable gc_cv_;
    int                     writers_    = 0;
    bool                    collecting_ = false;
};

// True when the file starts with the GGUF magic; false for a missing or short file.
bool has_gguf_magic(const std::filesystem::path & path);

} // namespace specd::models
