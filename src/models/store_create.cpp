// Store::create through StoreCreate (store_create.h): a model from a Modelfile, every source
// checked before the first write.
#include "models/store_create.h"

#include "models/store_io.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

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

// A rewritten GGUF's temp file in blobs/: invisible to readers, swept if this process dies,
// removed here otherwise.
struct TempFile {
    fs::path path;
    ~TempFile() {
        std::error_code ec;
        fs::remove(path, ec);
    }
};

bool looks_like_path(std::string_view value) {
    return value.starts_with('/') || value.starts_with('.') || value.starts_with('~') ||
           value.ends_with(".gguf") || value.ends_with(".bin") || value.find('\\') != std::string_view::npos;
}

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
    Manifest manifest = StoreCreate(*this, mf, modelfile_dir, options).run(name);
    collect_replaced(replaced);
    return manifest;
}

StoreCreate::StoreCreate(Store & store, const Modelfile & mf, const fs::path & modelfile_dir,
                         const CreateOptions & options)
    : store_(store), mf_(mf), modelfile_dir_(modelfile_dir), options_(options) {}

Manifest StoreCreate::run(const ModelName & name) {
    check_modelfile();
    Store::WriteGuard guard(store_);

    // Find and check every source first, so that a bad Modelfile writes nothing.
    find_model_and_projector();
    find_draft();
    find_adapters();

    store_model_layer();
    const std::optional<Layer> projector = projector_layer();
    const std::optional<Layer> draft     = draft_layer();
    const Parameters           params    = parameters();

    std::vector<Layer> layers{model_layer_};
    if (projector) {
        layers.push_back(*projector);
    }
    add_adapter_layers(layers);
    if (draft) {
        layers.push_back(*draft);
    }
    if (!params.empty()) {
        layers.push_back(add_bytes_layer(to_json(params).dump(), media_type::params));
    }
    add_text_layers(layers);
    add_foreign_layers(layers);
    return write_manifest(name, std::move(layers));
}

// --- checks

void StoreCreate::check_modelfile() const {
    if (mf_.from.empty()) {
        throw error(ErrorKind::bad_request, "no FROM line");
    }
    if (mf_.from.size() > 2) {
        throw error(ErrorKind::bad_request, "at most two FROM lines: the model and its vision projector");
    }
    if (mf_.template_text && !options_.allow_template) {
        throw error(ErrorKind::bad_request, "TEMPLATE is not supported yet: the chat template comes from the GGUF file");
    }
    if (mf_.template_text && options_.check_template) options_.check_template(*mf_.template_text);
}

StoreCreate::Source StoreCreate::find_source(const std::string & value, const char * what) const {
    Source         src;
    const fs::path path = resolve_local_path(value, modelfile_dir_);
    std::error_code ec;
    if (!options_.allow_local_files) {
        // A remote client's create: uploaded blobs and stored models only, so a request
        // can never make the server read a file of its own choosing.
        const bool in_blobs = path.parent_path().lexically_normal() == store_.blobs_dir_.lexically_normal() &&
                              path.filename().string().starts_with("sha256-") &&
                              is_valid_digest(path.filename().string());
        if (in_blobs && fs::is_regular_file(path, ec)) {
            src.file = path;
            return src;
        }
        const auto model_name = in_blobs ? std::nullopt : parse(value);
        if (model_name && (src.model = store_.read_manifest(*model_name))) {
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
            if ((src.model = store_.read_manifest(*model_name))) {
                return src;
            }
            throw error(ErrorKind::not_found, std::string(what) + ": no file or model named '" + value + "'");
        }
    }
    throw error(ErrorKind::not_found, std::string(what) + ": no such file: " + base_name(path));
}

// With two FROM lines, as in Ollama, the vision projector is the one whose GGUF
// architecture is "clip", on either line (known only when `describe` can read headers).
void StoreCreate::find_model_and_projector() {
    from_ = find_source(mf_.from[0], "FROM");
    if (from_.file) check_gguf(*from_.file);
    if (mf_.from.size() == 2) {
        Source second = find_source(mf_.from[1], "FROM");
        if (second.file) check_gguf(*second.file);
        if (is_projector(from_) && !is_projector(second)) {
            std::swap(from_, second);
            model_line_ = 1;
        }
        if (!second.file) {
            throw error(ErrorKind::bad_request, "of two FROM lines one must be a vision projector GGUF file");
        }
        if (options_.describe && !is_projector(second)) {
            throw error(ErrorKind::bad_request, "of two FROM lines one must be a vision projector (a GGUF file "
                                                "with architecture clip); neither is");
        }
        projector_file_ = second.file;
    }
    if (is_projector(from_)) {
        throw error(ErrorKind::bad_request, "FROM " + base_name(*from_.file) +
                                                " is a vision projector (clip): add a FROM line with the text model");
    }
    if (!from_.file) model_layer_of(*from_.model, from_label());
    model_gguf_ = gguf_of(from_, from_label());
    if (projector_file_ && options_.check_projector) options_.check_projector(*projector_file_, model_gguf_);
}

void StoreCreate::find_draft() {
    if (!mf_.draft) {
        // A draft rewrite (draft_quantize) needs a draft: this DRAFT line's or FROM's.
        if (options_.rewrite_draft && !(from_.model && from_.model->find(media_type::draft))) {
            throw error(ErrorKind::bad_request, "draft quantization needs a DRAFT model");
        }
        return;
    }
    draft_ = find_source(*mf_.draft, "DRAFT");
    if (draft_.file) {
        check_gguf(*draft_.file);
        std::error_code ec;
        if (from_.file && fs::equivalent(*from_.file, *draft_.file, ec)) {
            throw error(ErrorKind::bad_request, "DRAFT must be a different model than FROM");
        }
    } else {
        model_layer_of(*draft_.model, draft_label());
        // Only the draft's GGUF becomes the draft layer: its adapters would be dropped.
        if (draft_.model->find(media_type::adapter) != nullptr) {
            throw error(ErrorKind::bad_request, "DRAFT model '" + *mf_.draft + "' uses a LoRA adapter, which a draft cannot");
        }
    }
    if (options_.check_draft) {
        const fs::path draft_gguf = gguf_of(draft_, draft_label());
        options_.check_draft(model_gguf_, draft_gguf);
    }
}

void StoreCreate::find_adapters() {
    for (const auto & value : mf_.adapters) {
        Source src = find_source(value, "ADAPTER");
        if (!src.file) {
            throw error(ErrorKind::bad_request, "ADAPTER must be a LoRA GGUF file, not a model name ('" + value + "')");
        }
        check_gguf(*src.file);
        if (options_.check_adapter) options_.check_adapter(model_gguf_, *src.file);
        adapter_files_.push_back(*src.file);
    }
}

// --- writes

// Start from the base model's layers (FROM <model>) or a new GGUF (FROM <file>).
void StoreCreate::store_model_layer() {
    if (options_.rewrite_model) {
        rewrite_model();
    } else if (from_.file) {
        progress("parsing GGUF");
        if (options_.describe) {
            config_ = options_.describe(*from_.file);
        }
        model_layer_ = add_file_layer(*from_.file, media_type::model);
    } else {
        model_layer_ = model_layer_of(*from_.model, from_label());
        base_        = from_.model->layers;
        config_      = store_.read_config(*from_.model);
    }
}

// Through a temp file in blobs/, then stored like any GGUF: hashed, verified and renamed
// into place.
void StoreCreate::rewrite_model() {
    const TempFile rewritten{temp_path_in(store_.blobs_dir_)};
    options_.rewrite_model(model_gguf_, rewritten.path);
    check_gguf(rewritten.path);
    if (from_.model) {
        base_   = from_.model->layers;
        config_ = store_.read_config(*from_.model);
    }
    if (options_.describe) {
        const ModelConfig described = options_.describe(rewritten.path);
        if (config_.model_family.empty()) config_ = described;
        config_.file_type  = described.file_type;
        config_.model_type = described.model_type;
    }
    model_layer_ = add_file_layer(rewritten.path, media_type::model);
}

std::optional<Layer> StoreCreate::projector_layer() {
    std::optional<Layer> projector = inherited(media_type::projector);
    if (projector_file_) {
        projector = add_file_layer(*projector_file_, media_type::projector);
    }
    return projector;
}

// Adapters stack: the base model's stay and new ones are added after them (Ollama's order).
void StoreCreate::add_adapter_layers(std::vector<Layer> & layers) {
    for (const auto & layer : base_) {
        if (layer.media_type == media_type::adapter) {
            layers.push_back(layer);
        }
    }
    for (const auto & file : adapter_files_) {
        Layer layer = add_file_layer(file, media_type::adapter);
        const bool seen = std::any_of(layers.begin(), layers.end(), [&](const Layer & l) {
            return l.media_type == media_type::adapter && l.digest == layer.digest;
        });
        if (!seen) layers.push_back(std::move(layer));
    }
}

std::optional<Layer> StoreCreate::draft_layer() {
    std::optional<Layer> draft = inherited(media_type::draft);
    if (draft) draft->media_type = media_type::draft; // one stored under specd's old type
    if (options_.rewrite_draft) {
        // find_draft refused a create without any draft, so one of the two is there.
        const bool from_line = draft_.file || draft_.model;
        draft = rewrite_draft(from_line ? gguf_of(draft_, draft_label()) : store_.blob_path(draft->digest));
    } else if (draft_.file) {
        draft = add_file_layer(*draft_.file, media_type::draft);
    } else if (draft_.model) {
        const Layer layer = model_layer_of(*draft_.model, draft_label());
        draft             = Layer{std::string(media_type::draft), layer.digest, layer.size};
    }
    if (draft && draft->digest == model_layer_.digest) {
        throw error(ErrorKind::bad_request, "DRAFT must be a different model than FROM");
    }
    return draft;
}

// The draft's GGUF (the DRAFT line's, or the one inherited from FROM) as rewrite_model does
// the model's.
Layer StoreCreate::rewrite_draft(const fs::path & draft_gguf) {
    const TempFile rewritten{temp_path_in(store_.blobs_dir_)};
    options_.rewrite_draft(draft_gguf, rewritten.path);
    check_gguf(rewritten.path);
    return add_file_layer(rewritten.path, media_type::draft);
}

Parameters StoreCreate::parameters() const {
    Parameters params;
    if (auto layer = inherited(media_type::params)) {
        try {
            // Unknown keys from another tool's params layer are dropped rather than failing
            // the create; resolve() reports them for models that are not re-created.
            const auto j = nlohmann::json::parse(store_.read_blob(layer->digest, 1u << 20));
            for (const auto & [key, value] : j.items()) {
                params.set_json(key, value);
            }
        } catch (const nlohmann::json::exception &) {
            throw error(ErrorKind::internal, from_label() + " has a corrupt params layer");
        }
    }
    params.merge_from(mf_.params);
    return params;
}

// TEMPLATE, SYSTEM, LICENSE and MESSAGE lines replace the base model's; absent, its stay.
void StoreCreate::add_text_layers(std::vector<Layer> & layers) {
    if (mf_.template_text) {
        layers.push_back(add_bytes_layer(*mf_.template_text, media_type::templ));
    } else if (auto layer = inherited(media_type::templ)) {
        layers.push_back(*layer);
    }
    if (mf_.system) {
        if (!mf_.system->empty()) { // SYSTEM "" clears an inherited system prompt
            layers.push_back(add_bytes_layer(*mf_.system, media_type::system));
        }
    } else if (auto layer = inherited(media_type::system)) {
        layers.push_back(*layer);
    }
    if (!mf_.licenses.empty()) {
        for (const auto & license : mf_.licenses) {
            layers.push_back(add_bytes_layer(license, media_type::license));
        }
    } else {
        for (const auto & layer : base_) {
            if (layer.media_type == media_type::license) {
                layers.push_back(layer);
            }
        }
    }
    if (!mf_.messages.empty()) {
        nlohmann::json messages = nlohmann::json::array();
        for (const auto & m : mf_.messages) {
            messages.push_back({{"role", m.role}, {"content", m.content}});
        }
        layers.push_back(add_bytes_layer(messages.dump(), media_type::messages));
    } else if (auto layer = inherited(media_type::messages)) {
        layers.push_back(*layer);
    }
}

// Layers of kinds this server does not interpret travel along unchanged.
void StoreCreate::add_foreign_layers(std::vector<Layer> & layers) const {
    for (const auto & layer : base_) {
        const auto known = {media_type::model, media_type::projector, media_type::draft, media_type::params,
                            media_type::templ, media_type::system, media_type::license, media_type::messages,
                            media_type::adapter};
        if (std::none_of(known.begin(), known.end(), [&](std::string_view t) { return media_type::is_kind(layer.media_type, t); })) {
            layers.push_back(layer);
        }
    }
}

// The config blob names every layer; the manifest, written last, makes the model visible.
Manifest StoreCreate::write_manifest(const ModelName & name, std::vector<Layer> layers) {
    // RENDERER, PARSER, REQUIRES: the Modelfile's, else what the FROM model had.
    if (mf_.renderer) config_.renderer = *mf_.renderer;
    if (mf_.parser) config_.parser = *mf_.parser;
    if (mf_.requires_version) config_.requires_version = *mf_.requires_version;
    config_.diff_ids.clear();
    for (const auto & layer : layers) {
        config_.diff_ids.push_back(layer.digest);
    }
    if (config_.model_format.empty()) {
        config_.model_format = "gguf";
    }
    Manifest manifest;
    manifest.config = add_bytes_layer(to_json(config_).dump(), media_type::config);
    manifest.layers = std::move(layers);
    progress("writing manifest");
    store_.write_manifest(name, manifest);
    progress("success");
    return manifest;
}

// --- helpers

void StoreCreate::progress(const std::string & status) const {
    if (options_.progress) {
        options_.progress(status);
    }
}

bool StoreCreate::is_projector(const Source & src) const {
    return src.file && options_.describe && options_.describe(*src.file).model_family == "clip";
}

void StoreCreate::check_gguf(const fs::path & file) const {
    if (!has_gguf_magic(file)) {
        throw error(ErrorKind::bad_request, "not a GGUF file: " + base_name(file));
    }
}

Layer StoreCreate::model_layer_of(const Manifest & m, const std::string & what) const {
    const Layer * layer = m.find(media_type::model);
    if (layer == nullptr) {
        throw error(ErrorKind::internal, what + " has no model layer");
    }
    return *layer;
}

fs::path StoreCreate::gguf_of(const Source & src, const std::string & what) const {
    return src.file ? *src.file : store_.blob_path(model_layer_of(*src.model, what).digest);
}

std::string StoreCreate::from_label() const { return "FROM model '" + mf_.from[model_line_] + "'"; }

std::string StoreCreate::draft_label() const { return "DRAFT model '" + *mf_.draft + "'"; }

std::optional<Layer> StoreCreate::inherited(std::string_view type) const {
    for (const auto & layer : base_) {
        if (media_type::is_kind(layer.media_type, type)) {
            return layer;
        }
    }
    return std::nullopt;
}

Layer StoreCreate::add_file_layer(const fs::path & file, std::string_view type) {
    bool              existed = false;
    const std::string digest  = store_.put_file(file, &existed);
    progress((existed ? "using existing layer " : "creating new layer ") + digest);
    std::error_code ec;
    return Layer{std::string(type), digest, fs::file_size(store_.blob_path(digest), ec)};
}

Layer StoreCreate::add_bytes_layer(std::string_view bytes, std::string_view type) {
    bool              existed = false;
    const std::string digest  = store_.put_bytes(bytes, &existed);
    progress((existed ? "using existing layer " : "creating new layer ") + digest);
    return Layer{std::string(type), digest, uint64_t(bytes.size())};
}

} // namespace specd::models
