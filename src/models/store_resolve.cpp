// Store::resolve: a stored model as what the server loads and runs (blob paths checked
// against the manifest's sizes, parameters, texts), and the Modelfile that recreates it.
#include "models/store.h"

#include "models/store_io.h"

namespace specd::models {

namespace fs = std::filesystem;

ResolvedModel Store::resolve(const ModelName & name) const {
    const auto bytes = read_manifest_bytes(name);
    if (!bytes) {
        throw error(ErrorKind::not_found, "model '" + name.display() + "' not found");
    }
    ResolvedModel out;
    out.name   = name;
    out.digest = sha256_digest(*bytes);
    try {
        out.manifest = parse_manifest(*bytes);
    } catch (const std::invalid_argument & e) {
        throw error(ErrorKind::internal, "the manifest of " + name.display() + " is corrupt: " + e.what());
    }
    const Manifest & m = out.manifest;

    // A blob path, checked to exist with the size the manifest promises.
    auto blob_file = [&](const Layer & layer) {
        const fs::path  path = blob_path(layer.digest);
        std::error_code ec;
        if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != layer.size) {
            throw error(ErrorKind::internal, "model '" + name.display() + "' is incomplete: blob " + layer.digest +
                                                 " is missing or truncated; create or pull it again");
        }
        return path;
    };
    auto text = [&](const Layer & layer) {
        blob_file(layer);
        return read_blob(layer.digest);
    };

    const Layer * model = m.find(media_type::model);
    if (model == nullptr) {
        throw error(ErrorKind::bad_request, "model '" + name.display() + "' has no GGUF model layer");
    }
    out.model_gguf = blob_file(*model);
    if (const Layer * layer = m.find(media_type::projector)) {
        out.projector = blob_file(*layer);
    }
    if (const Layer * layer = m.find(media_type::draft)) {
        out.draft = blob_file(*layer);
    }
    for (const Layer * layer : m.find_all(media_type::adapter)) {
        out.adapters.push_back(blob_file(*layer));
    }
    out.config = read_config(m);
    if (const Layer * layer = m.find(media_type::params)) {
        const auto j = nlohmann::json::parse(text(*layer), nullptr, false);
        if (!j.is_object()) {
            throw error(ErrorKind::internal, "model '" + name.display() + "' has a corrupt params layer");
        }
        for (const auto & [key, value] : j.items()) {
            if (!is_known_parameter(key)) {
                out.unsupported_params.push_back(key);
            } else if (auto err = out.params.set_json(key, value)) {
                throw error(ErrorKind::internal, "model '" + name.display() + "' has a bad parameter: " + *err);
            }
        }
    }
    if (const Layer * layer = m.find(media_type::system)) {
        out.system = text(*layer);
    }
    if (const Layer * layer = m.find(media_type::templ)) {
        out.template_text = text(*layer);
    }
    for (const Layer * layer : m.find_all(media_type::license)) {
        out.licenses.push_back(text(*layer));
    }
    if (const Layer * layer = m.find(media_type::messages)) {
        const auto j = nlohmann::json::parse(text(*layer), nullptr, false);
        if (!j.is_array()) {
            throw error(ErrorKind::internal, "model '" + name.display() + "' has a corrupt messages layer");
        }
        for (const auto & msg : j) {
            if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() || !msg.contains("content") ||
                !msg["content"].is_string()) {
                throw error(ErrorKind::internal, "model '" + name.display() + "' has a corrupt messages layer");
            }
            out.messages.push_back({msg["role"].get<std::string>(), msg["content"].get<std::string>()});
        }
    }
    return out;
}

Modelfile ResolvedModel::modelfile() const {
    Modelfile mf;
    mf.from.push_back(model_gguf.string());
    if (projector) {
        mf.from.push_back(projector->string());
    }
    if (draft) {
        mf.draft = draft->string();
    }
    for (const auto & adapter : adapters) {
        mf.adapters.push_back(adapter.string());
    }
    mf.params = params;
    if (!system.empty()) {
        mf.system = system;
    }
    mf.template_text = template_text;
    mf.licenses      = licenses;
    mf.messages      = messages;
    if (!config.renderer.empty()) mf.renderer = config.renderer;
    if (!config.parser.empty()) mf.parser = config.parser;
    if (!config.requires_version.empty()) mf.requires_version = config.requires_version;
    return mf;
}

} // namespace specd::models
