// Store's manifests: finding a name's file (case-insensitively, as other tools may keep the
// case typed), reading and writing one, and listing them all.
#include "models/store.h"

#include "models/store_io.h"

#include <algorithm>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

std::string lowercase(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; });
    return s;
}

} // namespace

std::optional<fs::path> Store::find_manifest_file(const ModelName & name) const {
    std::error_code ec;
    const fs::path  exact = manifests_dir_ / name.manifest_relpath();
    if (fs::is_regular_file(exact, ec)) {
        return exact;
    }
    // Names are case-insensitive, but a store written by another tool may keep the case the
    // user typed: match each level case-insensitively.
    fs::path dir = manifests_dir_;
    for (const std::string * part : {&name.host, &name.ns, &name.model, &name.tag}) {
        const std::string want = lowercase(*part);
        std::optional<fs::path> found;
        for (const auto & entry : fs::directory_iterator(dir, ec)) {
            if (!is_temp_name(entry.path()) && lowercase(entry.path().filename().string()) == want) {
                found = entry.path();
                break;
            }
        }
        if (!found) {
            return std::nullopt;
        }
        dir = *found;
    }
    return fs::is_regular_file(dir, ec) ? std::optional<fs::path>(dir) : std::nullopt;
}

void Store::write_manifest(const ModelName & name, const Manifest & manifest) {
    WriteGuard guard(*this);
    // A manifest naming a blob that is not there would be a model that cannot load.
    if (!has_blob(manifest.config.digest)) {
        throw error(ErrorKind::internal, "manifest names a missing blob: " + manifest.config.digest);
    }
    for (const auto & layer : manifest.layers) {
        if (!has_blob(layer.digest)) {
            throw error(ErrorKind::internal, "manifest names a missing blob: " + layer.digest);
        }
    }
    const fs::path  target = find_manifest_file(name).value_or(manifests_dir_ / name.manifest_relpath());
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
        throw io_error("cannot create the manifest directory", ec);
    }
    write_file_atomic(target, to_json(manifest).dump());
}

std::optional<std::string> Store::read_manifest_bytes(const ModelName & name) const {
    const auto path = find_manifest_file(name);
    if (!path) {
        return std::nullopt;
    }
    return read_file(*path, k_max_manifest_len);
}

std::optional<Manifest> Store::read_manifest(const ModelName & name) const {
    const auto bytes = read_manifest_bytes(name);
    if (!bytes) {
        return std::nullopt;
    }
    try {
        return parse_manifest(*bytes);
    } catch (const std::invalid_argument & e) {
        throw error(ErrorKind::internal, "the manifest of " + name.display() + " is corrupt: " + e.what());
    }
}

ModelConfig Store::read_config(const Manifest & manifest) const {
    try {
        return config_from_json(nlohmann::json::parse(read_blob(manifest.config.digest, 1u << 20)));
    } catch (const std::exception &) {
        return ModelConfig{}; // details are cosmetic: the model still lists and runs
    }
}

std::vector<std::pair<ModelName, fs::path>> Store::manifest_files() const {
    std::vector<std::pair<ModelName, fs::path>> out;
    std::error_code                             ec;
    // Exactly four levels (host/namespace/model/tag); anything else is not a manifest.
    auto subdirs = [&](const fs::path & dir) {
        std::vector<fs::path> dirs;
        for (const auto & entry : fs::directory_iterator(dir, ec)) {
            std::error_code e;
            if (!is_temp_name(entry.path()) && entry.is_directory(e)) {
                dirs.push_back(entry.path());
            }
        }
        return dirs;
    };
    for (const auto & host : subdirs(manifests_dir_)) {
        for (const auto & ns : subdirs(host)) {
            for (const auto & model : subdirs(ns)) {
                for (const auto & entry : fs::directory_iterator(model, ec)) {
                    std::error_code e;
                    if (is_temp_name(entry.path()) || !entry.is_regular_file(e)) {
                        continue;
                    }
                    const std::string text = host.filename().string() + "/" + ns.filename().string() + "/" +
                                             model.filename().string() + ":" + entry.path().filename().string();
                    if (auto name = parse(text)) {
                        out.emplace_back(std::move(*name), entry.path());
                    }
                }
            }
        }
    }
    return out;
}

std::vector<StoreEntry> Store::list() const {
    std::vector<StoreEntry> out;
    for (const auto & [name, path] : manifest_files()) {
        StoreEntry entry;
        try {
            const auto bytes = read_file(path, k_max_manifest_len);
            if (!bytes) {
                continue; // removed since the directory was read
            }
            const Manifest manifest = parse_manifest(*bytes);
            entry.name              = name;
            entry.digest            = sha256_digest(*bytes);
            entry.size              = manifest.total_size();
            std::error_code ec;
            entry.modified = to_system_time(fs::last_write_time(path, ec));
            entry.config = read_config(manifest);
        } catch (const std::exception &) {
            continue; // a corrupt manifest is not a model; resolve() reports it by name
        }
        out.push_back(std::move(entry));
    }
    std::sort(out.begin(), out.end(), [](const StoreEntry & a, const StoreEntry & b) {
        return a.modified != b.modified ? a.modified > b.modified : a.name.full() < b.name.full();
    });
    return out;
}

} // namespace specd::models
