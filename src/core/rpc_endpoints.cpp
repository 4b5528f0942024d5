#include "core/rpc_endpoints.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace specd {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A host ggml's endpoint parser reads back: a name or an IPv4 address, no ':' (it splits at
// the first one) and nothing a shell or a log line would mangle.
bool plain_host(std::string_view host) {
    return !host.empty() && host.size() <= 253 && std::all_of(host.begin(), host.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
           });
}

} // namespace

bool is_loopback_host(std::string_view host) {
    if (host == "localhost") return true;
    if (!host.starts_with("127.")) return false;
    // Four decimal octets, each 0-255.
    int              parts = 0;
    std::string_view rest  = host;
    while (true) {
        const size_t     dot   = rest.find('.');
        std::string_view octet = rest.substr(0, dot);
        if (!all_digits(octet) || octet.size() > 3 || std::stoi(std::string(octet)) > 255) return false;
        ++parts;
        if (dot == std::string_view::npos) break;
        rest = rest.substr(dot + 1);
    }
    return parts == 4;
}

std::vector<RpcEndpoint> parse_rpc_endpoints(std::string_view list, bool allow_remote) {
    std::vector<RpcEndpoint> out;
    while (true) {
        const size_t     comma = list.find(',');
        std::string_view entry = trim(list.substr(0, comma));
        const std::string shown(entry);
        const size_t     colon = entry.rfind(':');
        if (colon == std::string_view::npos) {
            throw std::invalid_argument("RPC worker \"" + shown + "\" must be host:port");
        }
        const std::string_view host = entry.substr(0, colon);
        const std::string_view port = entry.substr(colon + 1);
        if (!plain_host(host)) throw std::invalid_argument("RPC worker \"" + shown + "\" has no usable host name or IPv4 address");
        if (!all_digits(port) || port.size() > 5 || std::stoi(std::string(port)) < 1 || std::stoi(std::string(port)) > 65535) {
            throw std::invalid_argument("RPC worker \"" + shown + "\" needs a port from 1 to 65535");
        }
        if (!allow_remote && !is_loopback_host(host)) {
            throw std::invalid_argument("RPC worker \"" + shown +
                                        "\" is not on this machine: the RPC protocol has no authentication or encryption, "
                                        "so only loopback workers are used unless SPECD_RPC_ALLOW_REMOTE=1 is set");
        }
        RpcEndpoint e{std::string(host), static_cast<uint16_t>(std::stoi(std::string(port)))};
        if (std::find(out.begin(), out.end(), e) != out.end()) {
            throw std::invalid_argument("RPC worker \"" + shown + "\" is named twice");
        }
        out.push_back(std::move(e));
        if (comma == std::string_view::npos) break;
        list = list.substr(comma + 1);
    }
    if (out.size() > 16) throw std::invalid_argument("at most 16 RPC workers (ggml's limit)");
    return out;
}

} // namespace specd
