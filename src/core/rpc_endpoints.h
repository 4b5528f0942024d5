#pragma once
// The RPC workers a server offloads layers to (`specd serve --rpc`, SPECD_RPC): a list of
// "host:port" read and checked at the edge, before anything connects. ggml's RPC protocol has
// no authentication and no encryption, so only loopback workers are accepted unless the user
// says otherwise (SPECD_RPC_ALLOW_REMOTE=1).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace specd {

struct RpcEndpoint {
    std::string host;
    uint16_t    port = 0;

    // "host:port", the form ggml's RPC backend takes and names its devices by.
    std::string text() const { return host + ":" + std::to_string(port); }
    bool        operator==(const RpcEndpoint &) const = default;
};

// 127.0.0.0/8 and "localhost": the addresses a worker on this machine alone answers on.
bool is_loopback_host(std::string_view host);

// "host:port[,host:port...]", spaces around entries ignored, duplicates refused. Throws
// std::invalid_argument naming the entry for a bad form, a port outside 1-65535, or (unless
// `allow_remote`) a host that is not loopback.
std::vector<RpcEndpoint> parse_rpc_endpoints(std::string_view list, bool allow_remote);

} // namespace specd
