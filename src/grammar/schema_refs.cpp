// $ref within the schema ("#", "#/..."): pointer resolution, one rule per target (so
// recursive schemas work), and the check that no cycle of refs writes nothing.
#include "grammar/schema_compiler_impl.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace specd::grammar::schema {

// "#", "#/a/b" (JSON pointer in a URI fragment) -> canonical pointer "", "/a/b".
std::string Compiler::ref_pointer(const std::string & ref, const std::string & ptr) {
    if (ref.empty() || ref[0] != '#' || (ref.size() > 1 && ref[1] != '/'))
        fail("unsupported $ref \"" + ref + "\" at " + where(ptr) + ": only refs within the schema (\"#\", \"#/...\") are supported");
    std::string decoded;
    for (size_t i = 1; i < ref.size(); ++i) {
        if (ref[i] == '%' && i + 2 < ref.size() && std::isxdigit(static_cast<unsigned char>(ref[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(ref[i + 2]))) {
            decoded += static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            decoded += ref[i];
        }
    }
    return decoded;
}

const json & Compiler::resolve(const std::string & pointer, const std::string & ref, const std::string & ptr) const {
    const json * at = &root_;
    size_t       i  = 0;
    while (i < pointer.size()) {
        size_t      next = pointer.find('/', i + 1);
        std::string raw  = pointer.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
        std::string token;
        for (size_t k = 0; k < raw.size(); ++k) {
            if (raw[k] == '~' && k + 1 < raw.size() && (raw[k + 1] == '0' || raw[k + 1] == '1')) {
                token += raw[k + 1] == '0' ? '~' : '/';
                ++k;
            } else {
                token += raw[k];
            }
        }
        if (at->is_object() && at->contains(token)) {
            at = &(*at)[token];
        } else if (at->is_array() && !token.empty() && token.size() < 10 &&
                   std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                   std::stoul(token) < at->size()) {
            at = &(*at)[std::stoul(token)];
        } else {
            fail("unresolved $ref \"" + ref + "\" at " + where(ptr));
        }
        i = next == std::string::npos ? pointer.size() : next;
    }
    return *at;
}

std::string Compiler::ref(const std::string & ref, const std::string & ptr, int depth) {
    const auto   pointer = ref_pointer(ref, ptr);
    const json & target  = resolve(pointer, ref, ptr);
    check_progress(pointer, ref, ptr);
    if (auto it = refs_.find(pointer); it != refs_.end()) return it->second;
    const auto name = g_.reserve(hint(pointer));
    refs_[pointer]  = name; // before the body: recursive refs find it
    enter(pointer, depth + 1);
    g_.define(name, body(target, pointer, depth + 1));
    return name;
}

// The refs a schema reaches before any of its value is written: through $ref and the
// branches of anyOf/oneOf/allOf. A cycle among those is a rule that derives itself
// without consuming input (left recursion), which llama.cpp's grammar rejects.
void Compiler::first_refs(const json & s, int depth, std::vector<std::pair<std::string, std::string>> & out) const {
    if (!s.is_object() || depth > lim_.max_depth) return;
    if (s.contains("$ref") && s["$ref"].is_string()) {
        // Refs this compiler does not follow fail where they are visited, with their place.
        const auto r = s["$ref"].get<std::string>();
        if (!r.empty() && r[0] == '#' && (r.size() == 1 || r[1] == '/')) out.emplace_back(ref_pointer(r, ""), r);
    }
    for (const char * c : {"anyOf", "oneOf", "allOf"})
        if (s.contains(c) && s[c].is_array())
            for (const auto & b : s[c]) first_refs(b, depth + 1, out);
}

void Compiler::check_progress(const std::string & pointer, const std::string & ref, const std::string & ptr) {
    std::vector<std::string> path;
    const std::function<void(const std::string &, const std::string &)> dfs = [&](const std::string & p, const std::string & r) {
        auto & state = progress_[p];
        if (state == 2) return;
        path.push_back(r);
        if (state == 1) {
            std::string cycle;
            for (size_t i = std::find(path.begin(), path.end(), r) - path.begin(); i < path.size(); ++i)
                cycle += (cycle.empty() ? "" : " -> ") + path[i];
            fail("$ref cycle that writes nothing at " + where(ptr) + ": " + cycle);
        }
        if (static_cast<int>(path.size()) > lim_.max_depth)
            fail("$ref chain at " + where(ptr) + " exceeds the limit max_depth (" + std::to_string(lim_.max_depth) + ")");
        state = 1;
        std::vector<std::pair<std::string, std::string>> next;
        first_refs(resolve(p, r, ptr), 0, next);
        for (const auto & [np, nr] : next) dfs(np, nr);
        progress_[p] = 2;
        path.pop_back();
    };
    dfs(pointer, ref);
}

} // namespace specd::grammar::schema
