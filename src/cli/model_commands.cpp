// list, ps, stop, rm, cp. Like Ollama's CLI, these go through the running server's API when
// one answers; without a server list, rm and cp work on the store directly (ps and stop
// need one).
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/human_format.h"
#include "cli/terminal.h"
#include "core/settings.h"
#include "models/store.h"
#include "prepare/model_catalog.h"

#include <cstdio>

namespace specd::cli {

namespace {

using json = nlohmann::json;

// Runs `via_api` when a server is up, else `direct` on the store; errors become exit 1.
template <class Api, class Direct> int either(Api via_api, Direct direct) {
    try {
        ApiClient c = ApiClient::configured();
        if (c.server_up()) return via_api(c);
        models::Store store(configured_models_dir());
        return direct(store);
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

std::string short_id(const json & m) {
    std::string id = m.value("digest", "");
    if (id.rfind("sha256:", 0) == 0) id = id.substr(7);
    return id.substr(0, 12);
}

std::string relative(const std::string & rfc3339, const std::string & unknown) {
    const auto t = parse_rfc3339(rfc3339);
    return t ? human_time(*t, Clock::now()) : unknown;
}

void print_tags(const json & tags) {
    std::vector<std::vector<std::string>> rows = {{"NAME", "ID", "SIZE", "MODIFIED"}};
    for (const auto & m : tags["models"]) {
        rows.push_back({m.value("name", ""), short_id(m), human_bytes(m.value("size", uint64_t(0))),
                        relative(m.value("modified_at", ""), "")});
    }
    std::fputs(format_table(rows).c_str(), stdout);
}

// Ollama's PROCESSOR column: where the model's bytes are, by size_vram.
std::string processor(uint64_t size, uint64_t vram) {
    if (vram == 0) return "100% CPU";
    if (vram >= size) return "100% GPU";
    const int cpu = static_cast<int>(100.0 * double(size - vram) / double(size) + 0.5);
    return std::to_string(cpu) + "%/" + std::to_string(100 - cpu) + "% CPU/GPU";
}

} // namespace

int cmd_list() {
    return either(
        [](ApiClient & c) {
            std::string body;
            const int   status = c.request("GET", "/api/tags", {}, body);
            if (status != 200) return fail(error_message(body, status));
            print_tags(json::parse(body));
            return 0;
        },
        [](models::Store & store) {
            print_tags(prepare::catalog_tags(store));
            return 0;
        });
}

int cmd_ps() {
    try {
        ApiClient c = ApiClient::configured();
        if (!c.server_up()) return fail(c.unreachable_message());
        std::string body;
        const int   status = c.request("GET", "/api/ps", {}, body);
        if (status != 200) return fail(error_message(body, status));
        std::vector<std::vector<std::string>> rows = {{"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"}};
        const json ps = json::parse(body);
        for (const auto & m : ps["models"]) {
            const uint64_t size = m.value("size", uint64_t(0));
            rows.push_back({m.value("name", ""), short_id(m), human_bytes(size),
                            processor(size, m.value("size_vram", uint64_t(0))),
                            std::to_string(m.value("context_length", 0)), relative(m.value("expires_at", ""), "Stopping...")});
        }
        std::fputs(format_table(rows).c_str(), stdout);
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

// Ollama's `stop`: a generate request without a prompt and keep_alive 0 unloads the model.
int cmd_stop(const std::string & model) {
    try {
        ApiClient c = ApiClient::configured();
        if (!c.server_up()) return fail(c.unreachable_message());
        std::string body;
        const int   status = c.request("POST", "/api/generate", {{"model", model}, {"keep_alive", 0}}, body);
        if (status == 404) return fail("couldn't find model \"" + model + "\" to stop");
        if (status != 200) return fail(error_message(body, status));
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

int cmd_rm(const std::vector<std::string> & models) {
    for (const auto & name : models) {
        const int rc = either(
            [&](ApiClient & c) {
                std::string body;
                const int   status = c.request("DELETE", "/api/delete", {{"model", name}}, body);
                if (status != 200) return fail(error_message(body, status));
                return 0;
            },
            [&](models::Store & store) {
                prepare::catalog_delete(store, name);
                return 0;
            });
        if (rc != 0) return rc;
        std::printf("deleted '%s'\n", name.c_str());
    }
    return 0;
}

int cmd_cp(const std::string & source, const std::string & destination) {
    const int rc = either(
        [&](ApiClient & c) {
            std::string body;
            const int   status = c.request("POST", "/api/copy", {{"source", source}, {"destination", destination}}, body);
            if (status != 200) return fail(error_message(body, status));
            return 0;
        },
        [&](models::Store & store) {
            prepare::catalog_copy(store, source, destination);
            return 0;
        });
    if (rc == 0) std::printf("copied '%s' to '%s'\n", source.c_str(), destination.c_str());
    return rc;
}

} // namespace specd::cli
