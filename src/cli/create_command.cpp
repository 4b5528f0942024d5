// `specd create NAME [-f Modelfile] [-q TYPE] [--draft-quantize TYPE]`. Through a running
// server as Ollama's CLI does it: each local file is uploaded as a blob (with a progress bar)
// unless the server has it, then /api/create names the blobs and streams its progress. Without
// a server the store is written directly.
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/terminal.h"
#include "core/settings.h"
#include "models/digest.h"
#include "models/modelfile.h"
#include "models/store.h"
#include "prepare/model_catalog.h"

#include <fstream>
#include <optional>
#include <sstream>

namespace specd::cli {

namespace {

using json = nlohmann::json;

// The digest of a file, as /api/blobs names it.
std::string file_digest(const std::filesystem::path & file) {
    std::ifstream     in(file, std::ios::binary);
    Sha256    h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return h.finish_digest();
}

class RemoteCreate {
  public:
    RemoteCreate(ApiClient & c, const std::filesystem::path & dir) : c_(c), dir_(dir) {}

    // A local GGUF becomes an uploaded blob (`digest` set); anything else must name a model.
    // Returns an error message.
    std::optional<std::string> source(const std::string & value, std::string & digest) {
        std::filesystem::path p = value;
        if (p.is_relative()) p = dir_ / p;
        if (!std::filesystem::exists(p)) {
            if (models::parse(value)) return std::nullopt;
            return "no such file: " + p.filename().string();
        }
        if (std::filesystem::is_directory(p)) return p.filename().string() + " is a directory; give a GGUF file";
        if (!models::has_gguf_magic(p)) return "not a GGUF file: " + p.filename().string();
        digest = file_digest(p);
        // GET rather than HEAD: a refusal (a wrong API key, say) comes with its reason, and
        // nothing is uploaded to a server that will not take it.
        std::string out;
        const int   has = c_.request("GET", "/api/blobs/" + digest, {}, out);
        if (has == 200) return std::nullopt;
        if (has != 404) return "cannot upload " + p.filename().string() + ": " + error_message(out, has);
        const std::string status = "copying file " + digest.substr(0, 19);
        const int code = c_.upload("/api/blobs/" + digest, p.string(), out, [&](uint64_t sent, uint64_t total) {
            printer_.show({status, digest, total, sent});
        });
        if (code != 200 && code != 201) {
            return "uploading " + p.filename().string() + " failed: " + (code == 0 ? out : error_message(out, code));
        }
        return std::nullopt;
    }

    ProgressPrinter & printer() { return printer_; }

  private:
    ApiClient &           c_;
    std::filesystem::path dir_;
    ProgressPrinter       printer_;
};

int create_via_api(ApiClient & c, const CreateOptions & o, const models::Modelfile & mf, const std::filesystem::path & dir) {
    RemoteCreate remote(c, dir);
    remote.printer().status("gathering model components");
    json body = {{"model", o.name}, {"stream", true}};
    if (!o.quantize.empty()) body["quantize"] = o.quantize;
    if (!o.draft_quantize.empty()) body["draft_quantize"] = o.draft_quantize;
    json files = json::object();
    for (const auto & from : mf.from) {
        std::string digest;
        if (auto err = remote.source(from, digest)) return fail(*err);
        if (digest.empty()) body["from"] = from;
        else files[std::filesystem::path(from).filename().string()] = digest;
    }
    if (mf.draft) {
        std::string digest;
        if (auto err = remote.source(*mf.draft, digest)) return fail("DRAFT: " + *err);
        body["draft"] = digest.empty() ? *mf.draft : digest;
    }
    if (!files.empty()) body["files"] = files;
    json adapters = json::object();
    for (const auto & adapter : mf.adapters) {
        std::string digest;
        if (auto err = remote.source(adapter, digest)) return fail("ADAPTER: " + *err);
        if (digest.empty()) return fail("ADAPTER must be a LoRA GGUF file, not a model name ('" + adapter + "')");
        adapters[std::filesystem::path(adapter).filename().string()] = digest;
    }
    if (!adapters.empty()) body["adapters"] = adapters;
    if (!mf.messages.empty()) {
        json messages = json::array();
        for (const auto & m : mf.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
        body["messages"] = messages;
    }
    if (mf.system) body["system"] = *mf.system;
    if (mf.template_text) body["template"] = *mf.template_text;
    if (!mf.params.empty()) body["parameters"] = models::to_json(mf.params);
    if (!mf.licenses.empty()) body["license"] = mf.licenses;
    const std::string error = stream_progress(c, "/api/create", body, remote.printer());
    return error.empty() ? 0 : fail(error);
}

} // namespace

int cmd_create(const CreateOptions & o) {
    try {
        std::ifstream in(o.file);
        if (!in) return fail("cannot read " + std::filesystem::path(o.file).filename().string());
        std::stringstream text;
        text << in.rdbuf();
        const auto mf    = models::parse_modelfile(text.str());
        const auto model = models::parse_or_throw(o.name);
        const auto dir   = std::filesystem::absolute(o.file).parent_path();
        ApiClient  c     = ApiClient::configured();
        if (c.server_up()) return create_via_api(c, o, mf, dir);

        models::Store   store(configured_models_dir());
        ProgressPrinter printer;
        const auto      progress = [&printer](const std::string & status) { printer.status(status); };
        models::CreateOptions opts = prepare::create_options(progress);
        if (!o.quantize.empty()) opts.rewrite_model = prepare::quantize_rewrite(o.quantize, progress);
        if (!o.draft_quantize.empty()) opts.rewrite_draft = prepare::quantize_rewrite(o.draft_quantize, progress);
        store.create(model, mf, dir, opts); // its last status is "success"
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

} // namespace specd::cli
