// encoding/json as templates reach it: append_json (go_template_format.h), json.Marshal's
// output with its HTML-safe escaping and its float forms.
#include "templates/go_template_format.h"

#include "templates/go_template_strconv.h"

#include <cmath>
#include <string>

namespace specd::templates {

namespace {

void append_json_string(std::string & out, std::string_view s) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default:
                    if (c < 0x20 || c == '<' || c == '>' || c == '&') {
                        out += "\\u00";
                        out += k_hex_lower[c >> 4];
                        out += k_hex_lower[c & 0xF];
                    } else {
                        out += static_cast<char>(c);
                    }
            }
            ++i;
            continue;
        }
        uint32_t     cp;
        const size_t w = utf8_at(s, i, cp);
        if (w == 0) {
            out += "\\ufffd";
            ++i;
        } else if (cp == 0x2028 || cp == 0x2029) {
            out += cp == 0x2028 ? "\\u2028" : "\\u2029";
            i += w;
        } else {
            out.append(s, i, w);
            i += w;
        }
    }
    out += '"';
}

// encoding/json's float: %f, or %e outside [1e-6, 1e21), shortest, "e-07" written "e-7".
bool append_json_float(std::string & out, double v) {
    if (!std::isfinite(v)) return false;
    const double a = std::fabs(v);
    if (a != 0 && (a < 1e-6 || a >= 1e21)) {
        std::string s = format_float(v, 'e', -1);
        const size_t n = s.size();
        if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
        out += s;
    } else {
        out += format_float(v, 'f', -1);
    }
    return true;
}

bool append_json_node(std::string & out, const json & node, int depth) {
    if (depth < 0) return false;
    switch (node.type()) {
        case json::value_t::null: out += "null"; return true;
        case json::value_t::boolean: out += node.get<bool>() ? "true" : "false"; return true;
        case json::value_t::number_integer: out += std::to_string(node.get<int64_t>()); return true;
        case json::value_t::number_unsigned: out += std::to_string(node.get<uint64_t>()); return true;
        case json::value_t::number_float: return append_json_float(out, node.get<double>());
        case json::value_t::string: append_json_string(out, node.get_ref<const std::string &>()); return true;
        case json::value_t::array: {
            out += '[';
            bool first = true;
            for (const auto & e : node) {
                if (!first) out += ',';
                first = false;
                if (!append_json_node(out, e, depth - 1)) return false;
            }
            out += ']';
            return true;
        }
        case json::value_t::object: {
            out += '{';
            bool first = true;
            for (const auto & [k, e] : node.items()) {
                if (!first) out += ',';
                first = false;
                append_json_string(out, k);
                out += ':';
                if (!append_json_node(out, e, depth - 1)) return false;
            }
            out += '}';
            return true;
        }
        default:
            return false; // binary / discarded: nothing Ollama could pass
    }
}

} // namespace

bool append_json(std::string & out, const Value & v, int max_depth) {
    switch (v.kind()) {
        case Value::Kind::nil: out += "null"; return true;
        case Value::Kind::boolean: out += v.as_bool() ? "true" : "false"; return true;
        case Value::Kind::integer: out += std::to_string(v.as_int()); return true;
        case Value::Kind::floating: return append_json_float(out, v.as_float());
        case Value::Kind::string: append_json_string(out, v.as_string()); return true;
        case Value::Kind::object: return append_json_node(out, v.node(), max_depth);
        case Value::Kind::array:
            out += '[';
            for (size_t i = v.begin(); i < v.end(); ++i) {
                if (i > v.begin()) out += ',';
                if (!append_json_node(out, v.node()[i], max_depth - 1)) return false;
            }
            out += ']';
            return true;
    }
    return false;
}

} // namespace specd::templates
