// `specd pull NAME [--insecure]`: through the running server's /api/pull when one answers,
// else straight into the store. `specd push NAME [--insecure]`: through the server's
// /api/push. Progress goes to stderr (progress.h).
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/terminal.h"
#include "core/settings.h"
#include "models/pull.h"

namespace specd::cli {

int cmd_pull(const TransferOptions & o) {
    try {
        ProgressPrinter printer;
        ApiClient       c = ApiClient::configured();
        if (c.server_up()) {
            const std::string error =
                stream_progress(c, "/api/pull", {{"model", o.model}, {"insecure", o.insecure}}, printer);
            return error.empty() ? 0 : fail(error);
        }
        models::Store       store(configured_models_dir());
        models::PullOptions options;
        options.registry          = models::RegistryConfig::from_env();
        options.registry.insecure = o.insecure;
        options.progress          = [&](const models::PullProgress & p) {
            printer.show({p.status, p.digest, p.total, p.completed});
        };
        models::pull_model(store, o.model, std::move(options));
        return 0;
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

int cmd_push(const TransferOptions & o) {
    try {
        ApiClient c = ApiClient::configured();
        if (!c.server_up()) return fail(c.unreachable_message());
        // A server without the route answers its generic 404 before reading the body.
        std::string body;
        const int status = c.request("POST", "/api/push", {{"model", ""}}, body);
        if (status == 404 || status == 405) {
            return fail("this server cannot push models: it has no /api/push (HTTP " + std::to_string(status) + ")");
        }
        ProgressPrinter   printer;
        const std::string error =
            stream_progress(c, "/api/push", {{"model", o.model}, {"insecure", o.insecure}}, printer);
        return error.empty() ? 0 : fail(error);
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

} // namespace specd::cli
