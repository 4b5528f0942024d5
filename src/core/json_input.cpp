#include "core/json_input.h"

#include "core/error.h"
#include "core/json_depth.h"

namespace specd {

json parse_body(std::string_view body) {
    if (body.empty()) throw bad_request("missing request body");
    if (json_nesting_depth(body) > k_max_json_depth) {
        throw bad_request("request body nests deeper than " + std::to_string(k_max_json_depth) + " levels");
    }
    json j;
    try {
        j = json::parse(body);
    } catch (const json::exception & e) {
        // nlohmann's message says where and why: ill-formed UTF-8 (parse_error), or a number
        // beyond double range such as 1e999 (out_of_range, which would otherwise be a 500).
        throw bad_request(std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_object()) throw bad_request("request body must be a JSON object");
    return j;
}

std::optional<std::string> opt_string(const json & obj, const char * key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) throw bad_request(std::string(key) + " must be a string");
    return it->get<std::string>();
}

std::optional<bool> opt_bool(const json & obj, const char * key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) throw bad_request(std::string(key) + " must be a boolean");
    return it->get<bool>();
}

std::string require_string(const json & obj, const char * key) {
    auto v = opt_string(obj, key);
    if (!v || v->empty()) throw bad_request(std::string(key) + " is required");
    return *v;
}

} // namespace specd
