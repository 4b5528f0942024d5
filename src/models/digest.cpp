#include "models/digest.h"

namespace specd::models {

bool is_valid_digest(std::string_view digest) {
    // Exactly ^sha256[:-][0-9a-fA-F]{64}$ (Ollama's check), written out by hand: std::regex
    // costs more than the check itself, and the tests compare the two on every case.
    if (digest.size() != 71 || !digest.starts_with("sha256") || (digest[6] != ':' && digest[6] != '-')) {
        return false;
    }
    for (char c : digest.substr(7)) {
        const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (!hex) {
            return false;
        }
    }
    return true;
}

std::optional<std::string> normalize_digest(std::string_view digest) {
    if (!is_valid_digest(digest)) {
        return std::nullopt;
    }
    std::string out = "sha256:";
    for (char c : digest.substr(7)) {
        out += (c >= 'A' && c <= 'F') ? char(c - 'A' + 'a') : c;
    }
    return out;
}

std::optional<std::string> blob_filename(std::string_view digest) {
    auto normal = normalize_digest(digest);
    if (!normal) {
        return std::nullopt;
    }
    (*normal)[6] = '-';
    return normal;
}

} // namespace specd::models
