// Store's write lock and garbage collection: WriteGuard, the one collector that runs while no
// writer holds a guard, and the operations that free blobs (remove, copy over a model,
// collect_garbage).
#include "models/store.h"

#include "models/store_io.h"

#include <set>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

// Unreferenced blobs younger than this may belong to another process's write in progress.
constexpr auto k_orphan_grace = std::chrono::minutes(15);

} // namespace

Store::WriteGuard::WriteGuard(Store & store) : store_(store) {
    std::unique_lock lock(store_.gc_mutex_);
    store_.gc_cv_.wait(lock, [&] { return !store_.collecting_; });
    ++store_.writers_;
}

Store::WriteGuard::~WriteGuard() {
    std::lock_guard lock(store_.gc_mutex_);
    if (--store_.writers_ == 0) {
        store_.gc_cv_.notify_all();
    }
}

std::vector<std::string> Store::referenced_digests(const ModelName & name) const {
    std::vector<std::string> out;
    try {
        if (const auto m = read_manifest(name)) {
            out.push_back(m->config.digest);
            for (const auto & layer : m->layers) {
                out.push_back(layer.digest);
            }
        }
    } catch (const StoreError &) {
        // Unreadable: nothing is known to be referenced.
    }
    return out;
}

void Store::copy(const ModelName & src, const ModelName & dst) {
    const std::vector<std::string> replaced = referenced_digests(dst);
    {
        WriteGuard guard(*this);
        auto       manifest = read_manifest(src);
        if (!manifest) {
            throw error(ErrorKind::not_found, "model '" + src.display() + "' not found");
        }
        write_manifest(dst, *manifest);
    }
    collect_replaced(replaced);
}

template <typename Fn> auto Store::exclusive(Fn && fn) {
    {
        std::unique_lock lock(gc_mutex_);
        gc_cv_.wait(lock, [&] { return writers_ == 0 && !collecting_; });
        collecting_ = true;
    }
    struct Release {
        Store & s;
        ~Release() {
            std::lock_guard lock(s.gc_mutex_);
            s.collecting_ = false;
            s.gc_cv_.notify_all();
        }
    } release{*this};
    return fn();
}

bool Store::remove(const ModelName & name) {
    return exclusive([&] {
        const auto path = find_manifest_file(name);
        if (!path) {
            return false;
        }
        // A corrupt manifest frees nothing and is still removed; its blobs wait for an
        // age-based sweep.
        const std::vector<std::string> freed = referenced_digests(name);
        std::error_code ec;
        if (!fs::remove(*path, ec) || ec) {
            throw io_error("cannot remove the manifest of " + name.display(), ec);
        }
        fsync_dir(path->parent_path());
        // Empty tag/model/namespace/host directories would otherwise pile up.
        for (fs::path dir = path->parent_path(); dir != manifests_dir_ && dir.has_relative_path();
             dir = dir.parent_path()) {
            if (!fs::is_empty(dir, ec) || ec || !fs::remove(dir, ec)) {
                break;
            }
        }
        collect_locked(freed, k_orphan_grace);
        return true;
    });
}

size_t Store::collect_garbage(std::chrono::seconds grace) {
    return exclusive([&] { return collect_locked({}, grace); });
}

size_t Store::collect_locked(const std::vector<std::string> & freed, std::chrono::seconds grace) {
    std::set<std::string> referenced;
    for (const auto & [name, path] : manifest_files()) {
        try {
            const auto bytes = read_file(path, k_max_manifest_len);
            if (!bytes) {
                continue;
            }
            const Manifest manifest = parse_manifest(*bytes);
            referenced.insert(manifest.config.digest);
            for (const auto & layer : manifest.layers) {
                referenced.insert(layer.digest);
            }
        } catch (const std::exception &) {
            // Cannot tell what an unreadable manifest references: delete nothing.
            return 0;
        }
    }
    const std::set<std::string> freed_set(freed.begin(), freed.end());
    const auto                  now     = fs::file_time_type::clock::now();
    size_t                      removed = 0;
    std::error_code             ec;
    for (const auto & entry : fs::directory_iterator(blobs_dir_, ec)) {
        // Only exact blob names: Ollama's "-partial" downloads and our temp files are not
        // blobs and are not ours to judge here.
        const auto digest = normalize_digest(entry.path().filename().string());
        if (!digest || !entry.path().filename().string().starts_with("sha256-") || referenced.contains(*digest)) {
            continue;
        }
        std::error_code e;
        const bool      old_enough = now - entry.last_write_time(e) > grace && !e;
        if ((freed_set.contains(*digest) || old_enough) && fs::remove(entry.path(), e)) {
            ++removed;
        }
    }
    return removed;
}

void Store::collect_replaced(const std::vector<std::string> & old_digests) {
    if (!old_digests.empty()) {
        exclusive([&] { return collect_locked(old_digests, k_orphan_grace); });
    }
}

} // namespace specd::models
