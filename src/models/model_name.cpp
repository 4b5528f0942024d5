#include "models/model_name.h"

#include "core/error.h"

#include <algorithm>
#include <vector>

namespace specd::models {

namespace {

bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

std::string lowercase(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), to_lower);
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return to_lower(x) == to_lower(y);
           });
}

// Returns the reason `part` is not a valid `kind`, or "" when it is.
std::string check_part(std::string_view kind, std::string_view part, size_t max_len) {
    if (part.empty()) {
        return "model name has an empty " + std::string(kind);
    }
    if (part.find("..") != std::string_view::npos) {
        return "'..' is not allowed in model names";
    }
    if (part.size() > max_len) {
        return std::string(kind) + " is too long (" + std::to_string(part.size()) + " > " +
               std::to_string(max_len) + " characters)";
    }
    // A leading '.' or '-' would make hidden files or option-like path parts.
    if (!is_alnum(part[0]) && part[0] != '_') {
        return std::string(kind) + " must start with a letter, digit or '_'";
    }
    std::string_view body = part;
    const bool       host = kind == "host";
    if (host) {
        if (const size_t colon = part.find(':'); colon != std::string_view::npos) {
            body                  = part.substr(0, colon);
            std::string_view port = part.substr(colon + 1);
            if (port.empty() || port.size() > 5 ||
                !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                return "host port must be 1 to 5 digits";
            }
        }
    }
    for (char c : body) {
        if (!is_alnum(c) && c != '_' && c != '-' && c != '.') {
            return "invalid character in " + std::string(kind) +
                   " (allowed: letters, digits, '_', '-', '.')";
        }
    }
    return "";
}

} // namespace

std::string ModelName::display() const {
    std::string out;
    if (!iequals(host, k_default_host)) {
        out += host + "/" + ns + "/";
    } else if (!iequals(ns, k_default_namespace)) {
        out += ns + "/";
    }
    out += model + ":" + tag;
    return out;
}

std::string ModelName::full() const { return host + "/" + ns + "/" + model + ":" + tag; }

std::string ModelName::manifest_relpath() const {
    return lowercase(host) + "/" + lowercase(ns) + "/" + lowercase(model) + "/" + lowercase(tag);
}

bool ModelName::operator==(const ModelName & other) const {
    return iequals(host, other.host) && iequals(ns, other.ns) && iequals(model, other.model) &&
           iequals(tag, other.tag);
}

ParsedModelName parse_model_name(std::string_view text) {
    if (text.empty()) {
        return std::string("model name is empty");
    }
    if (text.size() > k_name_max_len) {
        return "model name is too long (" + std::to_string(text.size()) + " > " +
               std::to_string(k_name_max_len) + " characters)";
    }
    for (unsigned char c : text) {
        if (c >= 0x80) {
            return std::string("model names must be ASCII (letters, digits, '_', '-', '.')");
        }
        if (c < 0x20 || c == 0x7f) {
            return std::string("model name contains a control character");
        }
    }
    if (text.find('\\') != std::string_view::npos) {
        return std::string("backslashes are not allowed in model names");
    }
    if (text.front() == '/') {
        return std::string("a model name is not an absolute path");
    }
    if (text.find("://") != std::string_view::npos) {
        return std::string("a model name has no scheme (leave out 'https://')");
    }

    ModelName name;
    std::string_view rest = text;
    // The tag's ':' is the last one after the last '/'; an earlier ':' is the host's port.
    const size_t last_slash = rest.rfind('/');
    const size_t colon      = rest.rfind(':');
    if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
        name.tag = std::string(rest.substr(colon + 1));
        rest     = rest.substr(0, colon);
        if (name.tag.empty()) {
            return std::string("model name has an empty tag");
        }
    } else {
        name.tag = std::string(k_default_tag);
    }

    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        const size_t slash = rest.find('/', start);
        parts.push_back(rest.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
        if (slash == std::string_view::npos) {
            break;
        }
        start = slash + 1;
    }
    if (parts.size() > 3) {
        return std::string("model name has too many parts (expected [host/][namespace/]model[:tag])");
    }
    name.model = std::string(parts.back());
    name.ns    = parts.size() >= 2 ? std::string(parts[parts.size() - 2]) : std::string(k_default_namespace);
    name.host  = parts.size() == 3 ? std::string(parts[0]) : std::string(k_default_host);

    if (parts.size() == 3) {
        if (auto err = check_part("host", name.host, k_name_host_max_len); !err.empty()) {
            return err;
        }
    }
    if (auto err = check_part("namespace", name.ns, k_name_part_max_len); !err.empty()) {
        return err;
    }
    if (auto err = check_part("model", name.model, k_name_part_max_len); !err.empty()) {
        return err;
    }
    if (auto err = check_part("tag", name.tag, k_name_part_max_len); !err.empty()) {
        return err;
    }
    // The limit holds for the name as specd shows it too (":latest" added), so that what
    // `list` prints parses again.
    if (const size_t shown = name.display().size(); shown > k_name_max_len) {
        return "model name is too long with its tag (" + std::to_string(shown) + " > " +
               std::to_string(k_name_max_len) + " characters)";
    }
    return name;
}

std::optional<ModelName> parse(std::string_view text) {
    auto parsed = parse_model_name(text);
    if (auto * name = std::get_if<ModelName>(&parsed)) {
        return std::move(*name);
    }
    return std::nullopt;
}

ModelName parse_or_throw(std::string_view text) {
    auto parsed = parse_model_name(text);
    if (auto * err = std::get_if<std::string>(&parsed)) {
        throw bad_request("invalid model name: " + *err);
    }
    return std::get<ModelName>(std::move(parsed));
}

} // namespace specd::models
