#include "cli/client.h"

#include "core/settings.h"

#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace specd::cli {

ApiClient::ApiClient(const std::string & host, int port) : host_(host), port_(port) {
    // A server bound to every interface is reached through loopback.
    const std::string target = (host == "0.0.0.0" || host.empty()) ? "127.0.0.1" : host == "::" ? "::1" : host;
    http_ = std::make_unique<httplib::Client>(target, port);
    http_->set_connection_timeout(2);
    // A server started with SPECD_API_KEY wants it on every request; the CLI shares the env.
    if (const char * key = std::getenv("SPECD_API_KEY"); key && *key) http_->set_bearer_token_auth(key);
    http_->set_read_timeout(3600);
}

ApiClient::~ApiClient() = default;
ApiClient::ApiClient(ApiClient &&) noexcept = default;

ApiClient ApiClient::configured() {
    const HostPort hp = configured_host();
    return ApiClient(hp.host, hp.port);
}

bool ApiClient::server_up() {
    auto res = http_->Get("/api/version");
    return res && res->status == 200;
}

std::string ApiClient::unreachable_message() const {
    return "could not connect to the server at " + host_ + ":" + std::to_string(port_) +
           "; start it with `specd serve`";
}

int ApiClient::request(const std::string & method, const std::string & path, const nlohmann::json & body,
                       std::string & out) {
    httplib::Result res = method == "GET"      ? http_->Get(path)
                          : method == "HEAD"   ? http_->Head(path)
                          : method == "DELETE" ? http_->Delete(path, body.dump(), "application/json")
                                               : http_->Post(path, body.dump(), "application/json");
    if (!res) return 0;
    out = res->body;
    return res->status;
}

int ApiClient::upload(const std::string & path, const std::string & file, std::string & out,
                      const std::function<void(uint64_t, uint64_t)> & progress) {
    auto in = std::make_shared<std::ifstream>(file, std::ios::binary);
    if (!*in) {
        out = "cannot read " + std::filesystem::path(file).filename().string();
        return 0;
    }
    const auto size = std::filesystem::file_size(file);
    auto res = http_->Post(
        path, size,
        [in, size, &progress](size_t offset, size_t length, httplib::DataSink & sink) {
            std::vector<char> buf(std::min<size_t>(length, 1 << 20));
            in->seekg(static_cast<std::streamoff>(offset));
            in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
            const auto got = in->gcount();
            if (got <= 0 || !sink.write(buf.data(), static_cast<size_t>(got))) return false;
            if (progress) progress(offset + static_cast<uint64_t>(got), size);
            return true;
        },
        "application/octet-stream");
    if (!res) {
        out = "the server closed the connection during the upload (" + httplib::to_string(res.error()) + ")";
        return 0;
    }
    out = res->body;
    return res->status;
}

int ApiClient::stream(const std::string & path, const nlohmann::json & body,
                      const std::function<bool(const nlohmann::json & line)> & on_line) {
    std::string buffer;
    std::string error_body;
    int         status = 0;
    httplib::Request req;
    req.method = "POST";
    req.path   = path;
    req.body   = body.dump();
    req.set_header("Content-Type", "application/json");
    req.response_handler = [&](const httplib::Response & r) {
        status = r.status;
        return true;
    };
    req.content_receiver = [&](const char * data, size_t len, uint64_t, uint64_t) {
        if (status != 200) { error_body.append(data, len); return true; }
        buffer.append(data, len);
        for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
            const std::string line = buffer.substr(0, nl);
            buffer.erase(0, nl + 1);
            if (line.empty()) continue;
            if (!on_line(nlohmann::json::parse(line, nullptr, false))) return false;
        }
        return true;
    };
    auto res = http_->send(req);
    if (!res && status == 0) return 0;
    if (status != 200) on_line(nlohmann::json::parse(error_body, nullptr, false));
    return status;
}

std::string error_message(const std::string & body, int status) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("error")) {
        const auto & e = j["error"];
        if (e.is_string()) return e.get<std::string>();
        if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"];
    }
    return status == 0 ? "could not connect to the server" : "the server answered HTTP " + std::to_string(status);
}

} // namespace specd::cli
