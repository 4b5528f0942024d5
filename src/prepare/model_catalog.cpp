#include "prepare/model_catalog.h"

#include "templates/ollama_prompt.h"

#include "core/time_format.h"
#include "engine/adapter_check.h"
#include "engine/draft_kind.h"
#include "engine/gguf_info.h"
#include "engine/model_traits.h"
#include "engine/projector_types.h"
#include "engine/quantizer.h"
#include "prepare/answer_reader.h"

#include <map>
#include <mutex>

namespace specd::prepare {

namespace {

models::ModelName parse_name(const std::string & name) { return models::parse_or_throw(name); }

Error unknown_model(const std::string & name) {
    return Error(ErrorKind::not_found, "model \"" + name + "\" not found, try pulling it first");
}

json details_of(const models::ModelConfig & c) {
    json families = json::array();
    for (const auto & f : c.model_families) families.push_back(f);
    if (families.empty() && !c.model_family.empty()) families.push_back(c.model_family);
    return {{"parent_model", ""}, {"format", c.model_format.empty() ? "gguf" : c.model_format},
            {"family", c.model_family}, {"families", families},
            {"parameter_size", c.model_type}, {"quantization_level", c.file_type}};
}

// An array is its values when they were read (verbose), else null (Ollama omits big arrays).
json meta_value(const engine::MetaEntry & e) {
    return std::visit(
        [](const auto & v) -> json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, engine::MetaEntry::Array>) {
                if (v.values.size() != v.length || v.length == 0) return nullptr;
                json out = json::array();
                for (const auto & x : v.values) std::visit([&](const auto & y) { out.push_back(y); }, x);
                return out;
            } else return v;
        },
        e.value);
}

// The store's view of `name`; an unknown model is Ollama's 404 message.
models::ResolvedModel resolve_or_404(const models::Store & store, const models::ModelName & parsed,
                                     const std::string & name) {
    try {
        return store.resolve(parsed);
    } catch (const Error & e) {
        if (e.kind() == ErrorKind::not_found) throw unknown_model(name);
        throw;
    }
}

// Traits of a model blob: a vocabulary load costs milliseconds to a second, and a blob's
// bytes never change, so each digest is read once per process.
engine::ModelTraits traits_of(const models::ResolvedModel & r) {
    static std::mutex                                  mu;
    static std::map<std::string, engine::ModelTraits> cache;
    const models::Layer * layer = r.manifest.find(models::media_type::model);
    const std::string     key   = layer ? layer->digest : r.model_gguf.string();
    {
        std::lock_guard lock(mu);
        if (auto it = cache.find(key); it != cache.end()) return it->second;
    }
    const engine::ModelTraits traits = engine::read_model_traits(r.model_gguf);
    std::lock_guard lock(mu);
    cache.emplace(key, traits);
    return traits;
}

// `messages` of /api/create: [{role, content}], roles as a Modelfile's MESSAGE allows.
std::vector<models::ModelfileMessage> parse_create_messages(const json & messages) {
    if (!messages.is_array()) throw bad_request("messages must be a list of {role, content}");
    std::vector<models::ModelfileMessage> out;
    for (const auto & m : messages) {
        if (!m.is_object()) throw bad_request("messages must be a list of {role, content}");
        const std::string role = require_string(m, "role");
        if (role != "system" && role != "user" && role != "assistant") {
            throw bad_request("messages: role must be one of \"system\", \"user\", or \"assistant\", got \"" + role + "\"");
        }
        out.push_back({role, opt_string(m, "content").value_or("")});
    }
    return out;
}

// The store paths of `key`'s blobs ({file name: digest}, each uploaded through /api/blobs),
// in order; none when the field is absent or null. `blob` names them in errors.
std::vector<std::string> uploaded_blobs(const models::Store & store, const json & body, const char * key,
                                        const std::string & blob) {
    std::vector<std::string> out;
    const auto               it = body.find(key);
    if (it == body.end() || it->is_null()) return out;
    if (!it->is_object()) throw bad_request(std::string(key) + " must be an object of file name -> digest");
    for (const auto & [file, digest] : it->items()) {
        if (!digest.is_string()) throw bad_request(std::string(key) + ": digest of " + file + " must be a string");
        const auto path = store.blob_path(digest.get<std::string>()); // validates the digest
        if (!store.has_blob(digest.get<std::string>())) {
            throw bad_request(blob + " " + digest.get<std::string>() + " not found; upload it to /api/blobs first");
        }
        out.push_back(path.string());
    }
    return out;
}

} // namespace

std::string bare_digest(const std::string & digest) {
    return digest.rfind("sha256:", 0) == 0 ? digest.substr(7) : digest;
}

ServedModel catalog_resolve(const models::Store & store, const std::string & name) {
    const auto                  parsed = parse_name(name);
    const models::ResolvedModel r      = resolve_or_404(store, parsed, name);
    ServedModel m;
    m.files.name   = parsed.display();
    m.files.gguf   = r.model_gguf;
    m.files.digest = r.digest;
    m.files.system = r.system;
    m.files.draft  = r.draft;
    m.files.projector = r.projector;
    m.files.template_text = r.template_text;
    m.files.adapters = r.adapters;
    m.params       = r.params;
    for (const auto & msg : r.messages) m.messages.push_back({msg.role, msg.content, {}});
    return m;
}

json catalog_tags(const models::Store & store) {
    json models = json::array();
    for (const auto & e : store.list()) {
        models.push_back({{"name", e.name.display()}, {"model", e.name.display()},
                          {"modified_at", format_time(e.modified)}, {"size", e.size},
                          {"digest", bare_digest(e.digest)}, {"details", details_of(e.config)}});
    }
    return {{"models", models}};
}

json catalog_show(const models::Store & store, const std::string & name, bool verbose) {
    const auto                  parsed = parse_name(name);
    const models::ResolvedModel r      = resolve_or_404(store, parsed, name);
    const engine::GgufInfo info = engine::read_gguf_info(r.model_gguf, verbose);
    json model_info = json::object();
    for (const auto & e : info.metadata) {
        // As Ollama: the tokenizer's arrays (the whole vocabulary) only when verbose.
        if (!verbose && e.key.rfind("tokenizer.", 0) == 0 && std::holds_alternative<engine::MetaEntry::Array>(e.value)) {
            model_info[e.key] = nullptr;
            continue;
        }
        if (e.key == "tokenizer.chat_template") continue; // shown as "template"
        model_info[e.key] = meta_value(e);
    }
    model_info["general.parameter_count"] = info.n_params;

    std::string license;
    for (const auto & l : r.licenses) license += (license.empty() ? "" : "\n") + l;
    json out = {{"modelfile", models::format_modelfile(r.modelfile())},
                {"parameters", models::to_show_text(r.params)},
                {"template", r.template_text.value_or(info.chat_template)},
                {"details", details_of(r.config)},
                {"model_info", std::move(model_info)},
                {"capabilities", r.projector ? json::array({"completion", "vision"}) : json::array({"completion"})}};
    if (verbose) {
        json tensors = json::array();
        for (const auto & t : info.tensors) tensors.push_back({{"name", t.name}, {"type", t.type}, {"shape", t.shape}});
        out["tensors"] = std::move(tensors);
    }
    // Ollama's renderer, parser and requires, when the model has them (kept, not used: the
    // model's template renders).
    if (!r.config.renderer.empty()) out["renderer"] = r.config.renderer;
    if (!r.config.parser.empty()) out["parser"] = r.config.parser;
    if (!r.config.requires_version.empty()) out["requires"] = r.config.requires_version;
    // Ollama: an embedding model lists "embedding" instead of "completion".
    const engine::ModelTraits traits = traits_of(r);
    auto & capabilities = out["capabilities"];
    if (traits.embedding) {
        for (auto it = capabilities.begin(); it != capabilities.end(); ++it) {
            if (*it == "completion") {
                capabilities.erase(it);
                break;
            }
        }
        capabilities.push_back("embedding");
    }
    if (traits.fill_in_middle) capabilities.push_back("insert");
    for (const auto & c : template_capabilities(r.template_text, info.chat_template)) capabilities.push_back(c);
    if (r.projector) {
        // Ollama's projector_info: the projector GGUF's metadata.
        json projector_info = json::object();
        for (const auto & e : engine::read_gguf_info(*r.projector).metadata) projector_info[e.key] = meta_value(e);
        out["projector_info"] = std::move(projector_info);
    }
    if (r.draft) {
        // Not Ollama's: what drafts for this model (engine/draft_kind), told from the DRAFT's
        // architecture.
        const engine::GgufInfo d = engine::read_gguf_info(*r.draft);
        out["draft"] = {{"kind", engine::draft_kind_name(engine::draft_kind_of(d.architecture))},
                        {"architecture", d.architecture},
                        {"parameter_size", engine::format_parameter_count(d.n_params)}};
    } else if (auto builtin = engine::builtin_draft_kind(info)) {
        // Its own MTP layer drafts (no DRAFT): the layer is part of the model's parameters.
        out["draft"] = {{"kind", engine::draft_kind_name(*builtin)}, {"architecture", info.architecture}};
    }
    if (!r.system.empty()) out["system"] = r.system;
    if (!license.empty()) out["license"] = license;
    for (const auto & e : store.list()) {
        if (e.name == parsed) out["modified_at"] = format_time(e.modified);
    }
    return out;
}

void catalog_delete(models::Store & store, const std::string & name) {
    if (!store.remove(parse_name(name))) throw unknown_model(name);
}

void catalog_copy(models::Store & store, const std::string & source, const std::string & destination) {
    try {
        store.copy(parse_name(source), parse_name(destination));
    } catch (const Error & e) {
        if (e.kind() == ErrorKind::not_found) throw unknown_model(source);
        throw;
    }
}

void catalog_create(models::Store & store, const json & body, const std::function<void(const std::string &)> & progress,
                    const engine::TensorProgress & tensors) {
    // `name` is what Ollama's create took before `model`; it still reads it.
    const auto name = parse_name(body.contains("model") || !body.contains("name") ? require_string(body, "model")
                                                                                : require_string(body, "name"));
    models::Modelfile mf;
    if (auto from = opt_string(body, "from"); from && !from->empty()) {
        if (!models::parse(*from)) throw bad_request("from must name a model");
        mf.from.push_back(*from);
    }
    for (auto & path : uploaded_blobs(store, body, "files", "blob")) mf.from.push_back(std::move(path));
    if (mf.from.empty()) throw bad_request("neither 'from' nor 'files' was specified");
    // The draft as Ollama's create names it: `draft_files` (file name -> uploaded blob, one).
    if (auto it = body.find("draft_files"); it != body.end() && !it->is_null() && (!it->is_object() || it->size() > 1)) {
        throw bad_request("draft_files must be an object of one file name -> digest");
    }
    for (auto & path : uploaded_blobs(store, body, "draft_files", "draft blob")) mf.draft = std::move(path);
    // specd's extension for speculation: `draft` names a stored model or an uploaded blob.
    if (auto draft = opt_string(body, "draft"); draft && !draft->empty()) {
        if (mf.draft) throw bad_request("give the draft as draft or as draft_files, not both");
        if (models::is_valid_digest(*draft)) {
            if (!store.has_blob(*draft)) throw bad_request("draft blob " + *draft + " not found; upload it to /api/blobs first");
            mf.draft = store.blob_path(*draft).string();
        } else if (models::parse(*draft)) {
            mf.draft = *draft;
        } else {
            throw bad_request("draft must name a model or an uploaded blob digest");
        }
    }
    if (auto v = opt_string(body, "system")) mf.system = *v;
    if (auto v = opt_string(body, "renderer"); v && !v->empty()) mf.renderer = *v;
    if (auto v = opt_string(body, "parser"); v && !v->empty()) mf.parser = *v;
    if (auto v = opt_string(body, "requires"); v && !v->empty()) mf.requires_version = *v;
    if (auto v = opt_string(body, "template"); v && !v->empty()) mf.template_text = *v;
    mf.adapters = uploaded_blobs(store, body, "adapters", "adapter blob");
    if (auto it = body.find("messages"); it != body.end() && !it->is_null()) mf.messages = parse_create_messages(*it);
    std::function<void(const std::filesystem::path &, const std::filesystem::path &)> quantize;
    if (auto q = opt_string(body, "quantize"); q && !q->empty()) quantize = quantize_rewrite(*q, progress, tensors);
    // specd's extension: quantize the DRAFT model as well.
    std::function<void(const std::filesystem::path &, const std::filesystem::path &)> quantize_draft;
    if (auto q = opt_string(body, "draft_quantize"); q && !q->empty()) quantize_draft = quantize_rewrite(*q, progress, tensors);
    if (auto it = body.find("parameters"); it != body.end() && !it->is_null()) {
        if (!it->is_object()) throw bad_request("parameters must be an object");
        for (const auto & [key, value] : it->items()) {
            if (auto err = mf.params.set_json(key, value)) throw bad_request(*err);
        }
    }
    if (auto it = body.find("license"); it != body.end() && !it->is_null()) {
        if (it->is_string()) mf.licenses.push_back(it->get<std::string>());
        else if (it->is_array()) {
            for (const auto & l : *it) {
                if (!l.is_string()) throw bad_request("license must be a string or a list of strings");
                mf.licenses.push_back(l.get<std::string>());
            }
        } else throw bad_request("license must be a string or a list of strings");
    }
    models::CreateOptions opts = create_options(progress);
    opts.allow_local_files     = false; // a client names stored models and uploaded blobs, never paths
    opts.rewrite_model = std::move(quantize);
    opts.rewrite_draft = std::move(quantize_draft);
    try {
        store.create(name, mf, store.root(), opts);
    } catch (const Error & e) {
        if (e.kind() == ErrorKind::not_found) throw bad_request(e.what());
        throw;
    }
}

models::ModelConfig describe_gguf(const std::filesystem::path & gguf) {
    const engine::GgufInfo info = engine::read_gguf_info(gguf);
    models::ModelConfig c;
    c.model_family   = info.architecture;
    c.model_families = {info.architecture};
    c.model_type     = engine::format_parameter_count(info.n_params);
    c.file_type      = info.file_type;
    return c;
}

void check_draft_vocab(const std::filesystem::path & model_gguf, const std::filesystem::path & draft_gguf) {
    // A head reads the target's hidden state and cache: its kind decides what fits, before
    // the vocabularies are compared.
    engine::GgufInfo draft = engine::read_gguf_info(draft_gguf);
    if (const auto kind = engine::draft_kind_of(draft.architecture);
        kind == engine::DraftKind::eagle3 || kind == engine::DraftKind::dflash) {
        draft = engine::read_gguf_info(draft_gguf, /*verbose=*/true); // the layers it reads are an array
    }
    if (auto why = engine::draft_refusal(engine::read_gguf_info(model_gguf), draft); !why.empty()) {
        throw bad_request("DRAFT cannot be used with this model: " + why);
    }
    if (auto why = engine::gguf_vocab_mismatch(model_gguf, draft_gguf); !why.empty()) {
        throw bad_request("DRAFT cannot be used with this model: " + why);
    }
}

void check_adapter_fits(const std::filesystem::path & model_gguf, const std::filesystem::path & adapter_gguf) {
    if (auto why = engine::lora_adapter_mismatch(model_gguf, adapter_gguf); !why.empty()) {
        throw bad_request("ADAPTER cannot be used with this model: " + why);
    }
}

void check_projector_fits(const std::filesystem::path & projector_gguf, const std::filesystem::path & model_gguf) {
    if (auto why = engine::projector_file_refusal(projector_gguf); !why.empty()) throw bad_request(why);
    if (auto why = engine::projector_text_refusal(engine::read_gguf_info(model_gguf)); !why.empty()) throw bad_request(why);
}

std::function<void(const std::filesystem::path &, const std::filesystem::path &)>
quantize_rewrite(const std::string & type, std::function<void(const std::string &)> progress,
                 engine::TensorProgress tensors) {
    const auto quantize = engine::parse_quantize_type(type);
    if (!quantize) {
        throw bad_request("unsupported quantization type " + type + "; supported: " + engine::supported_quantize_types());
    }
    return [quantize = *quantize, progress = std::move(progress), tensors = std::move(tensors)](
               const std::filesystem::path & in, const std::filesystem::path & out) {
        engine::quantize_model(in, out, quantize, progress, tensors);
    };
}

models::CreateOptions create_options(std::function<void(const std::string &)> progress) {
    models::CreateOptions opts;
    opts.allow_template = true;
    opts.check_template = [](const std::string & text) { templates::parse_ollama_template(text); };
    opts.describe    = describe_gguf;
    opts.check_draft = check_draft_vocab;
    opts.check_adapter = check_adapter_fits;
    opts.check_projector = check_projector_fits;
    opts.progress    = std::move(progress);
    return opts;
}

} // namespace specd::prepare
