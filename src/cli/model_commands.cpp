// create, list, show, ps, stop, rm, cp. Like Ollama's CLI, these go through the running
// server's API when one answers; without a server they work on the store directly (ps and
// stop need one).
#include "api/model_catalog.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "core/settings.h"
#include "models/modelfile.h"
#include "models/store.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace specd::cli {

namespace {

using json = nlohmann::json;

ApiClient client() {
    const HostPort hp = configured_host();
    return ApiClient(hp.host, hp.port);
}

int fail(const std::string & message) {
    std::fprintf(stderr, "Error: %s\n", message.c_str());
    return 1;
}

// Runs `via_api` when a server is up, else `direct` on the store; errors become exit 1.
template <class Api, class Direct> int either(Api via_api, Direct direct) {
    try {
        ApiClient c = client();
        if (c.server_up()) return via_api(c);
        models::Store store(configured_models_dir());
        return direct(store);
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

std::string api_error(const std::string & body, int status) {
    auto j = json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"];
    return status == 0 ? "could not connect to the server" : "HTTP " + std::to_string(status);
}

void print_tags(const json & tags) {
    std::printf("%-40s %-15s %-10s %s\n", "NAME", "ID", "SIZE", "MODIFIED");
    for (const auto & m : tags["models"]) {
        std::string id = m.value("digest", "");
        if (id.rfind("sha256:", 0) == 0) id = id.substr(7);
        std::printf("%-40s %-15s %-10s %s\n", m.value("name", "").c_str(), id.substr(0, 12).c_str(),
                    (std::to_string(m.value("size", 0ull) / 1000000) + " MB").c_str(),
                    m.value("modified_at", "").substr(0, 19).c_str());
    }
}

} // namespace

// The digest of a file, as /api/blobs names it.
static std::string file_digest(const std::filesystem::path & file) {
    std::ifstream   in(file, std::ios::binary);
    models::Sha256  h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h.update(buf.data(), static_cast<size_t>(in.gcount()));
    }
    return h.finish_digest();
}

// Ollama's way: upload each local file as a blob (unless the server has it), then
// /api/create naming the blobs. The server validates and stores.
static int create_via_api(ApiClient & c, const std::string & name, const models::Modelfile & mf,
                          const std::filesystem::path & dir, const std::string & quantize) {
    json body = {{"model", name}, {"stream", false}};
    if (!quantize.empty()) body["quantize"] = quantize;
    json files = json::object();
    // A local GGUF becomes an uploaded blob (its digest); anything else must name a model.
    auto source = [&](const std::string & value, std::string & digest) -> std::optional<std::string> {
        std::filesystem::path p = value;
        if (p.is_relative()) p = dir / p;
        if (!std::filesystem::exists(p)) {
            if (models::parse(value)) return std::nullopt;
            return "no such file: " + p.filename().string();
        }
        if (std::filesystem::is_directory(p)) return p.filename().string() + " is a directory; give a GGUF file";
        if (!models::has_gguf_magic(p)) return "not a GGUF file: " + p.filename().string();
        digest = file_digest(p);
        std::string ignored;
        if (c.request("HEAD", "/api/blobs/" + digest, {}, ignored) != 200) {
            std::fprintf(stderr, "uploading %s\n", p.filename().string().c_str());
            const int status = c.upload("/api/blobs/" + digest, p.string());
            if (status != 200 && status != 201) {
                return "uploading " + p.filename().string() + " failed (HTTP " + std::to_string(status) + ")";
            }
        }
        return std::nullopt;
    };
    for (const auto & from : mf.from) {
        std::string digest;
        if (auto err = source(from, digest)) return fail(*err);
        if (digest.empty()) body["from"] = from;
        else files[std::filesystem::path(from).filename().string()] = digest;
    }
    if (mf.draft) {
        std::string digest;
        if (auto err = source(*mf.draft, digest)) return fail("DRAFT: " + *err);
        body["draft"] = digest.empty() ? *mf.draft : digest;
    }
    if (!files.empty()) body["files"] = files;
    json adapters = json::object();
    for (const auto & adapter : mf.adapters) {
        std::string digest;
        if (auto err = source(adapter, digest)) return fail("ADAPTER: " + *err);
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
    std::string out;
    const int   status = c.request("POST", "/api/create", body, out);
    if (status != 200) return fail(api_error(out, status));
    std::fprintf(stderr, "success\n");
    return 0;
}

int cmd_create(const Args & args) {
    std::string name, file = "Modelfile", quantize;
    for (size_t i = 0; i < args.size(); ++i) {
        if ((args[i] == "-f" || args[i] == "--file") && i + 1 < args.size()) file = args[++i];
        else if ((args[i] == "-q" || args[i] == "--quantize") && i + 1 < args.size()) quantize = args[++i];
        else if (name.empty()) name = args[i];
        else return fail("unexpected argument: " + args[i]);
    }
    if (name.empty()) return fail("usage: specd create NAME [-f Modelfile] [-q QUANTIZATION]");
    try {
        std::ifstream in(file);
        if (!in) return fail("cannot read " + std::filesystem::path(file).filename().string());
        std::stringstream text;
        text << in.rdbuf();
        const auto mf    = models::parse_modelfile(text.str());
        const auto model = models::parse_or_throw(name);
        const auto dir   = std::filesystem::absolute(file).parent_path();
        ApiClient  c     = client();
        if (c.server_up()) return create_via_api(c, name, mf, dir, quantize);
        models::Store store(configured_models_dir());
        const auto progress = [](const std::string & status) { std::fprintf(stderr, "%s\n", status.c_str()); };
        models::CreateOptions opts = api::create_options(progress);
        if (!quantize.empty()) opts.rewrite_model = api::quantize_rewrite(quantize, progress);
        store.create(model, mf, dir, opts);
        std::fprintf(stderr, "success\n");
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

int cmd_list(const Args &) {
    return either(
        [](ApiClient & c) {
            std::string body;
            const int   status = c.request("GET", "/api/tags", {}, body);
            if (status != 200) return fail(api_error(body, status));
            print_tags(json::parse(body));
            return 0;
        },
        [](models::Store & store) {
            print_tags(api::catalog_tags(store));
            return 0;
        });
}

int cmd_show(const Args & args) {
    if (args.empty()) return fail("usage: specd show MODEL [--modelfile|--parameters|--system|--template]");
    const std::string name  = args[0];
    const std::string which = args.size() > 1 ? args[1] : "";
    auto print = [&](const json & s) {
        if (which == "--modelfile") std::printf("%s", s.value("modelfile", "").c_str());
        else if (which == "--parameters") std::printf("%s", s.value("parameters", "").c_str());
        else if (which == "--system") std::printf("%s\n", s.value("system", "").c_str());
        else if (which == "--template") std::printf("%s\n", s.value("template", "").c_str());
        else {
            const auto & d = s["details"];
            std::printf("  Model\n    architecture        %s\n    parameters          %s\n    quantization        %s\n",
                        d.value("family", "").c_str(), d.value("parameter_size", "").c_str(),
                        d.value("quantization_level", "").c_str());
            if (s.contains("model_info")) {
                const auto & mi  = s["model_info"];
                const auto   arc = d.value("family", "");
                if (mi.contains(arc + ".context_length")) {
                    std::printf("    context length      %s\n", mi[arc + ".context_length"].dump().c_str());
                }
            }
            if (!s.value("parameters", "").empty()) std::printf("\n  Parameters\n%s", s.value("parameters", "").c_str());
        }
        return 0;
    };
    return either(
        [&](ApiClient & c) {
            std::string body;
            const int   status = c.request("POST", "/api/show", {{"model", name}}, body);
            if (status != 200) return fail(api_error(body, status));
            return print(json::parse(body));
        },
        [&](models::Store & store) { return print(api::catalog_show(store, name)); });
}

int cmd_ps(const Args &) {
    try {
        ApiClient   c = client();
        std::string body;
        const int   status = c.request("GET", "/api/ps", {}, body);
        if (status != 200) return fail(api_error(body, status));
        std::printf("%-40s %-10s %-10s %-10s %s\n", "NAME", "SIZE", "CONTEXT", "PROCESSOR", "UNTIL");
        const json ps = json::parse(body);
        for (const auto & m : ps["models"]) {
            std::printf("%-40s %-10s %-10s %-10s %s\n", m.value("name", "").c_str(),
                        (std::to_string(m.value("size", 0ull) / 1000000) + " MB").c_str(),
                        std::to_string(m.value("context_length", 0)).c_str(), "100% CPU",
                        m.value("expires_at", "").substr(0, 19).c_str());
        }
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

// Ollama's `stop`: a generate request without a prompt and keep_alive 0 unloads the model.
int cmd_stop(const Args & args) {
    if (args.size() != 1) return fail("usage: specd stop MODEL");
    try {
        ApiClient c = client();
        if (!c.server_up()) return fail("could not connect to the server; no model is running without one");
        std::string body;
        const int   status = c.request("POST", "/api/generate", {{"model", args[0]}, {"keep_alive", 0}}, body);
        if (status == 404) return fail("couldn't find model \"" + args[0] + "\" to stop");
        if (status != 200) return fail(api_error(body, status));
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

int cmd_rm(const Args & args) {
    if (args.empty()) return fail("usage: specd rm MODEL...");
    for (const auto & name : args) {
        const int rc = either(
            [&](ApiClient & c) {
                std::string body;
                const int   status = c.request("DELETE", "/api/delete", {{"model", name}}, body);
                if (status != 200) return fail(api_error(body, status));
                return 0;
            },
            [&](models::Store & store) {
                api::catalog_delete(store, name);
                return 0;
            });
        if (rc != 0) return rc;
        std::printf("deleted '%s'\n", name.c_str());
    }
    return 0;
}

int cmd_cp(const Args & args) {
    if (args.size() != 2) return fail("usage: specd cp SOURCE DESTINATION");
    const int rc = either(
        [&](ApiClient & c) {
            std::string body;
            const int   status = c.request("POST", "/api/copy", {{"source", args[0]}, {"destination", args[1]}}, body);
            if (status != 200) return fail(api_error(body, status));
            return 0;
        },
        [&](models::Store & store) {
            api::catalog_copy(store, args[0], args[1]);
            return 0;
        });
    if (rc == 0) std::printf("copied '%s' to '%s'\n", args[0].c_str(), args[1].c_str());
    return rc;
}

} // namespace specd::cli
