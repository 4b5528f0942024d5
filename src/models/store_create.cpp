// Store::create: a model from a Modelfile, every source checked before the first write.
#include "models/store.h"

#include "models/store_io.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

// Ollama's FROM rules: "~/" is the home directory, relative paths are relative to the
// Modelfile's directory.
fs::path resolve_local_path(const std::string & value, const fs::path & modelfile_dir) {
    if (value == "~" || value.starts_with("~/")) {
        const char * home = std::getenv("HOME");
        if (home != nullptr && *home != '\0') {
            return fs::path(home) / value.substr(value.size() > 1 ? 2 : 1);
        }
    }
    fs::path p(value);
    return p.is_absolute() ? p : modelfile_dir / p;
}

bool looks_like_path(std::string_view value) {
    return value.starts_with('/') || value.starts_with('.') || value.starts_with('~') ||
           value.ends_with(".gguf") || value.ends_with(".bin") || value.find('\\') != std::string_view::npos;
}

struct Source {
    std::optional<fs::path> file;
    std::optional<Manifest> model;
};

} // namespace

bool has_gguf_magic(const fs::path & path) {
    std::ifstream in(path, std::ios::binary);
    char          magic[4] = {};
    return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

Manifest Store::create(const ModelName & name, const Modelfile & mf, const fs::path & modelfile_dir,
                       const CreateOptions & options) {
    // Re-creating a name orphans the layers only the old version used (an edited SYSTEM);
    // collect them once the new manifest is in place, as Ollama does. A corrupt old
    // manifest is simply overwritten.
    const std::vector<std::string> replaced = referenced_digests(name);
    Manifest manifest = create_guarded(name, mf, modelfile_dir, options);
    collect_replaced(replaced);
    return manifest;
}

Manifest Store::create_guarded(const ModelName & name, const Modelfile & mf, const fs::path & modelfile_dir,
                               const CreateOptions & options) {
    auto progress = [&](const std::string & status) {
        if (options.progress) {
            options.progress(status);
        }
    };
    if (mf.from.empty()) {
        throw error(ErrorKind::bad_request, "no FROM line");
    }
    if (mf.from.size() > 2) {
        throw error(ErrorKind::bad_request, "at most two FROM lines: the model and its vision projector");
    }
    if (mf.template_text && !options.allow_template) {
        throw error(ErrorKind::bad_request, "TEMPLATE is not supported yet: the chat template comes from the GGUF file");
    }
    if (mf.template_text && options.check_template) options.check_template(*mf.template_text);

    WriteGuard guard(*this);

    auto find_source = [&](const std::string & value, const char * what) {
        Source         src;
        const fs::path path = resolve_local_path(value, modelfile_dir);
        std::error_code ec;
        if (!options.allow_local_files) {
            // A remote client's create: uploaded blobs and stored models only, so a request
            // can never make the server read a file of its own choosing.
            const bool in_blobs = path.parent_path().lexically_normal() == blobs_dir_.lexically_normal() &&
                                  path.filename().string().starts_with("sha256-") &&
                                  is_valid_digest(path.filename().string());
            if (in_blobs && fs::is_regular_file(path, ec)) {
                src.file = path;
                return src;
            }
            const auto model_name = in_blobs ? std::nullopt : parse(value);
            if (model_name && (src.model = read_manifest(*model_name))) {
                return src;
            }
            // Echo a model name as typed; of a path, only its file name.
            throw error(ErrorKind::not_found, std::string(what) + ": no model or uploaded blob named '" +
                                                  (model_name ? value : base_name(path)) + "'");
        }
        if (fs::exists(path, ec)) {
            if (fs::is_directory(path, ec)) {
                throw error(ErrorKind::bad_request, std::string(what) + ": " + base_name(path) +
                                                        " is a directory; give a GGUF file");
            }
            src.file = path;
            return src;
        }
        if (!looks_like_path(value)) {
            if (auto model_name = parse(value)) {
                if ((src.model = read_manifest(*model_name))) {
                    return src;
                }
                throw error(ErrorKind::not_found, std::string(what) + ": no file or model named '" + value + "'");
            }
        }
        throw error(ErrorKind::not_found, std::string(what) + ": no such file: " + base_name(path));
    };
    auto check_gguf = [&](const fs::path & file) {
        if (!has_gguf_magic(file)) {
            throw error(ErrorKind::bad_request, "not a GGUF file: " + base_name(file));
        }
    };
    auto model_layer_of = [&](const Manifest & m, const std::string & what) {
        const Layer * layer = m.find(media_type::model);
        if (layer == nullptr) {
            throw error(ErrorKind::internal, what + " has no model layer");
        }
        return *layer;
    };
    auto add_file_layer = [&](const fs::path & file, std::string_view type) {
        bool              existed = false;
        const std::string digest  = put_file(file, &existed);
        progress((existed ? "using existing layer " : "creating new layer ") + digest);
        std::error_code ec;
        return Layer{std::string(type), digest, fs::file_size(blob_path(digest), ec)};
    };
    auto add_bytes_layer = [&](std::string_view bytes, std::string_view type) {
        bool              existed = false;
        const std::string digest  = put_bytes(bytes, &existed);
        progress((existed ? "using existing layer " : "creating new layer ") + digest);
        return Layer{std::string(type), digest, uint64_t(bytes.size())};
    };

    // Find and check every source first, so that a bad Modelfile writes nothing.
    // With two FROM lines, as in Ollama, the vision projector is the one whose GGUF
    // architecture is "clip", on either line (known only when `describe` can read headers).
    const auto is_projector = [&](const Source & src) {
        return src.file && options.describe && options.describe(*src.file).model_family == "clip";
    };
    size_t model_line = 0;
    Source from       = find_source(mf.from[0], "FROM");
    std::optional<fs::path> projector_file;
    if (from.file) check_gguf(*from.file);
    if (mf.from.size() == 2) {
        Source second = find_source(mf.from[1], "FROM");
        if (second.file) check_gguf(*second.file);
        if (is_projector(from) && !is_projector(second)) {
            std::swap(from, second);
            model_line = 1;
        }
        if (!second.file) {
            throw error(ErrorKind::bad_request, "of two FROM lines one must be a vision projector GGUF file");
        }
        if (options.describe && !is_projector(second)) {
            throw error(ErrorKind::bad_request, "of two FROM lines one must be a vision projector (a GGUF file "
                                                "with architecture clip); neither is");
        }
        projector_file = second.file;
    }
    if (is_projector(from)) {
        throw error(ErrorKind::bad_request, "FROM " + base_name(*from.file) +
                                                " is a vision projector (clip): add a FROM line with the text model");
    }
    if (!from.file) model_layer_of(*from.model, "FROM model '" + mf.from[model_line] + "'");
    Source draft_src;
    if (mf.draft) {
        draft_src = find_source(*mf.draft, "DRAFT");
        if (draft_src.file) {
            check_gguf(*draft_src.file);
            std::error_code ec;
            if (from.file && fs::equivalent(*from.file, *draft_src.file, ec)) {
                throw error(ErrorKind::bad_request, "DRAFT must be a different model than FROM");
            }
        } else {
            model_layer_of(*draft_src.model, "DRAFT model '" + *mf.draft + "'");
            // Only the draft's GGUF becomes the draft layer: its adapters would be dropped.
            if (draft_src.model->find(media_type::adapter) != nullptr) {
                throw error(ErrorKind::bad_request, "DRAFT model '" + *mf.draft + "' uses a LoRA adapter, which a draft cannot");
            }
        }
        if (options.check_draft) {
            const fs::path model_gguf =
                from.file ? *from.file : blob_path(model_layer_of(*from.model, "FROM model '" + mf.from[model_line] + "'").digest);
            const fs::path draft_gguf =
                draft_src.file ? *draft_src.file
                               : blob_path(model_layer_of(*draft_src.model, "DRAFT model '" + *mf.draft + "'").digest);
            options.check_draft(model_gguf, draft_gguf);
        }
    }

    // The GGUF the model layer comes from: what adapters are checked against and what a
    // rewrite (quantize) reads.
    const fs::path model_source =
        from.file ? *from.file : blob_path(model_layer_of(*from.model, "FROM model '" + mf.from[model_line] + "'").digest);
    std::vector<fs::path> adapter_files;
    for (const auto & value : mf.adapters) {
        Source src = find_source(value, "ADAPTER");
        if (!src.file) {
            throw error(ErrorKind::bad_request, "ADAPTER must be a LoRA GGUF file, not a model name ('" + value + "')");
        }
        check_gguf(*src.file);
        if (options.check_adapter) options.check_adapter(model_source, *src.file);
        adapter_files.push_back(*src.file);
    }

    // Start from the base model's layers (FROM <model>) or a new GGUF (FROM <file>).
    std::vector<Layer> base;
    ModelConfig        config;
    Layer              model_layer;
    if (options.rewrite_model) {
        // Through a temp file in blobs/ (invisible to readers, swept if this process dies),
        // then stored like any GGUF: hashed, verified and renamed into place.
        struct TempFile {
            fs::path path;
            ~TempFile() {
                std::error_code ec;
                fs::remove(path, ec);
            }
        } rewritten{temp_path_in(blobs_dir_)};
        options.rewrite_model(model_source, rewritten.path);
        check_gguf(rewritten.path);
        if (from.model) {
            base = from.model->layers;
            config = read_config(*from.model);
        }
        if (options.describe) {
            const ModelConfig described = options.describe(rewritten.path);
            if (config.model_family.empty()) config = described;
            config.file_type  = described.file_type;
            config.model_type = described.model_type;
        }
        model_layer = add_file_layer(rewritten.path, media_type::model);
    } else if (from.file) {
        progress("parsing GGUF");
        if (options.describe) {
            config = options.describe(*from.file);
        }
        model_layer = add_file_layer(*from.file, media_type::model);
    } else {
        model_layer = model_layer_of(*from.model, "FROM model '" + mf.from[model_line] + "'");
        base        = from.model->layers;
        config      = read_config(*from.model);
    }
    auto inherited = [&](std::string_view type) -> std::optional<Layer> {
        for (const auto & layer : base) {
            if (layer.media_type == type) {
                return layer;
            }
        }
        return std::nullopt;
    };

    std::optional<Layer> projector = inherited(media_type::projector);
    if (projector_file) {
        projector = add_file_layer(*projector_file, media_type::projector);
    }

    std::optional<Layer> draft = inherited(media_type::draft);
    if (draft_src.file) {
        draft = add_file_layer(*draft_src.file, media_type::draft);
    } else if (draft_src.model) {
        const Layer layer = model_layer_of(*draft_src.model, "DRAFT model '" + *mf.draft + "'");
        draft             = Layer{std::string(media_type::draft), layer.digest, layer.size};
    }
    if (draft && draft->digest == model_layer.digest) {
        throw error(ErrorKind::bad_request, "DRAFT must be a different model than FROM");
    }

    Parameters params;
    if (auto layer = inherited(media_type::params)) {
        try {
            // Unknown keys from another tool's params layer are dropped rather than failing
            // the create; resolve() reports them for models that are not re-created.
            const auto j = nlohmann::json::parse(read_blob(layer->digest, 1u << 20));
            for (const auto & [key, value] : j.items()) {
                params.set_json(key, value);
            }
        } catch (const nlohmann::json::exception &) {
            throw error(ErrorKind::internal, "FROM model '" + mf.from[model_line] + "' has a corrupt params layer");
        }
    }
    params.merge_from(mf.params);

    std::vector<Layer> layers{model_layer};
    if (projector) {
        layers.push_back(*projector);
    }
    // Adapters stack: the base model's stay and new ones are added after them (Ollama's order).
    for (const auto & layer : base) {
        if (layer.media_type == media_type::adapter) {
            layers.push_back(layer);
        }
    }
    for (const auto & file : adapter_files) {
        Layer layer = add_file_layer(file, media_type::adapter);
        const bool seen = std::any_of(layers.begin(), layers.end(), [&](const Layer & l) {
            return l.media_type == media_type::adapter && l.digest == layer.digest;
        });
        if (!seen) layers.push_back(std::move(layer));
    }
    if (draft) {
        layers.push_back(*draft);
    }
    if (!params.empty()) {
        layers.push_back(add_bytes_layer(to_json(params).dump(), media_type::params));
    }
    if (mf.template_text) {
        layers.push_back(add_bytes_layer(*mf.template_text, media_type::templ));
    } else if (auto layer = inherited(media_type::templ)) {
        layers.push_back(*layer);
    }
    if (mf.system) {
        if (!mf.system->empty()) { // SYSTEM "" clears an inherited system prompt
            layers.push_back(add_bytes_layer(*mf.system, media_type::system));
        }
    } else if (auto layer = inherited(media_type::system)) {
        layers.push_back(*layer);
    }
    if (!mf.licenses.empty()) {
        for (const auto & license : mf.licenses) {
            layers.push_back(add_bytes_layer(license, media_type::license));
        }
    } else {
        for (const auto & layer : base) {
            if (layer.media_type == media_type::license) {
                layers.push_back(layer);
            }
        }
    }
    if (!mf.messages.empty()) {
        nlohmann::json messages = nlohmann::json::array();
        for (const auto & m : mf.messages) {
            messages.push_back({{"role", m.role}, {"content", m.content}});
        }
        layers.push_back(add_bytes_layer(messages.dump(), media_type::messages));
    } else if (auto layer = inherited(media_type::messages)) {
        layers.push_back(*layer);
    }
    // Layers of kinds this server does not interpret travel along unchanged.
    for (const auto & layer : base) {
        const auto & t = layer.media_type;
        if (t != media_type::model && t != media_type::projector && t != media_type::draft &&
            t != media_type::params && t != media_type::templ && t != media_type::system &&
            t != media_type::license && t != media_type::messages && t != media_type::adapter) {
            layers.push_back(layer);
        }
    }

    config.diff_ids.clear();
    for (const auto & layer : layers) {
        config.diff_ids.push_back(layer.digest);
    }
    if (config.model_format.empty()) {
        config.model_format = "gguf";
    }
    Manifest manifest;
    manifest.config = add_bytes_layer(to_json(config).dump(), media_type::config);
    manifest.layers = std::move(layers);
    progress("writing manifest");
    write_manifest(name, manifest);
    progress("success");
    return manifest;
}

} // namespace specd::models
