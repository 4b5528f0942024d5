#pragma once
// Who may talk to the server: the DNS-rebinding defence (a server bound to loopback answers
// only requests addressed to a local name) and the optional API key.
#include <string>
#include <string_view>

namespace specd::api {

// Whether the listen address is a loopback one (127.0.0.0/8, ::1, localhost).
bool is_loopback(std::string_view host);

// For a loopback-bound server: the Host header must name this machine (localhost,
// *.localhost, 127.x.x.x, [::1]), with any port. An absent header (HTTP/1.0) passes.
bool host_header_allowed(std::string_view host_header);

// The dashboard's page and static assets (/ui, /ui/...): open without the API key, like
// the health checks. Its data (/api/dashboard) is not one of them.
bool is_dashboard_asset(std::string_view path);

// `Authorization: Bearer <key>`, compared in constant time.
bool api_key_matches(std::string_view authorization, std::string_view key);

} // namespace specd::api
