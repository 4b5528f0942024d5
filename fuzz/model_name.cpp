// Model names and digests: the two strings from outside that become paths in the store.
// A name that parses must map to a manifest path of four plain parts (nothing that climbs out
// of manifests/) and read back the same from its display() and full() forms; parse_or_throw
// must throw Error(bad_request) exactly when the name is rejected. A digest that validates
// must normalise to "sha256:<64 lowercase hex>" and a blob file name with no path in it;
// one that does not must give neither. The streaming SHA-256 must not depend on how its input
// is split.
#include "core/error.h"
#include "models/digest.h"
#include "models/model_name.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace specd;
using namespace specd::models;

namespace {

void check(bool ok) {
    if (!ok) __builtin_trap();
}

bool is_plain_path_part(std::string_view part) {
    if (part.empty() || part == "." || part == "..") return false;
    for (unsigned char c : part) {
        if (c < 0x20 || c >= 0x7f || c == '/' || c == '\\') return false;
    }
    return true;
}

void check_name(std::string_view text) {
    const ParsedModelName parsed = parse_model_name(text);
    const ModelName *     name   = std::get_if<ModelName>(&parsed);
    bool                  threw  = false;
    try {
        const ModelName again = parse_or_throw(text);
        check(name && again == *name);
    } catch (const Error & e) {
        check(e.kind() == ErrorKind::bad_request);
        threw = true;
    }
    check(threw == (name == nullptr));
    if (!name) return;

    const std::string rel = name->manifest_relpath();
    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        const size_t slash = rel.find('/', start);
        parts.push_back(std::string_view(rel).substr(start, slash == std::string::npos ? std::string::npos : slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    check(parts.size() == 4);
    for (auto p : parts) check(is_plain_path_part(p));

    for (const std::string & form : {name->display(), name->full()}) {
        const auto again = parse(form);
        check(again && *again == *name && again->manifest_relpath() == rel);
    }
}

bool is_lower_hex(std::string_view s) {
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

void check_digest(std::string_view text) {
    const auto normal = normalize_digest(text);
    const auto blob   = blob_filename(text);
    if (!is_valid_digest(text)) {
        check(!normal && !blob);
        return;
    }
    check(normal && normal->size() == 71 && normal->starts_with("sha256:") && is_lower_hex(normal->substr(7)));
    check(is_valid_digest(*normal));
    check(blob && *blob == "sha256-" + normal->substr(7));
}

void check_sha256(std::string_view bytes) {
    const std::string whole = sha256_digest(bytes);
    check(whole.size() == 71 && is_valid_digest(whole));
    // Split at two points the input itself picks.
    const size_t a = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) % (bytes.size() + 1);
    const size_t b = bytes.size() < 2 ? a : a + static_cast<unsigned char>(bytes[1]) % (bytes.size() - a + 1);
    Sha256       h;
    h.update(bytes.substr(0, a));
    h.update(bytes.substr(a, b - a));
    h.update(bytes.substr(b));
    check(h.finish_digest() == whole);
    h.reset();
    h.update(bytes);
    check(h.finish_digest() == whole);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    check_name(text);
    check_digest(text);
    check_sha256(text);
    return 0;
}
