// The dashboard: its page and assets under /ui, served without the API key like the health
// checks (they hold no data; the Host and origin rules still apply), and the snapshot the
// page polls at /api/dashboard, which follows every rule of the API.
#include "api/dashboard_report.h"
#include "api/http_json.h"
#include "api/routes.h"
#include "core/error.h"
#include "memory/ledger.h"
#include "ui/assets.h"

#include <string>

namespace specd::api {

namespace {

void send_asset(std::string body, const ui::Asset & asset, http::Response & res) {
    res.set_content(std::move(body), asset.content_type);
    // Built into this binary: a new binary may bring new assets under the same names.
    res.headers.set("Cache-Control", "no-cache");
    res.headers.set("X-Content-Type-Options", "nosniff");
}

// The page says whether the server wants an API key (never the key), so that it asks for one
// before its first poll instead of meeting a 401.
void send_page(const ServerConfig & cfg, http::Response & res) {
    const ui::Asset * page = ui::find_asset("index.html");
    std::string      html(page->body);
    if (!cfg.api_key.empty()) {
        const std::string flag = "data-key-required=\"false\"";
        if (const auto at = html.find(flag); at != std::string::npos) html.replace(at, flag.size(), "data-key-required=\"true\"");
    }
    send_asset(std::move(html), *page, res);
    // Its own scripts and styles only: nothing from elsewhere, no inline code, no framing.
    res.headers.set("Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
}

} // namespace

void add_dashboard_routes(http::Router & router, RouteContext ctx) {
    router.get("/ui", [ctx](http::Request &, http::Response & res) { send_page(ctx.cfg, res); });
    router.get("/ui/", [ctx](http::Request &, http::Response & res) { send_page(ctx.cfg, res); });
    router.get("/ui/*", [ctx](http::Request & req, http::Response & res) {
        const std::string & name = req.params.at(0);
        if (name == "index.html") return send_page(ctx.cfg, res);
        const ui::Asset * asset = ui::find_asset(name);
        if (!asset) throw Error(ErrorKind::not_found, "no such dashboard file");
        send_asset(std::string(asset->body), *asset, res);
    });
    router.get("/api/dashboard", [ctx](http::Request &, http::Response & res) {
        send_json(res, 200, dashboard_json(ctx.scheduler.loaded(), memory::process_ledger().snapshot(), ctx.prompt_cache_stats()));
    });
}

} // namespace specd::api
