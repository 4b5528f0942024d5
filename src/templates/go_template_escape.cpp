// text/template's html, js and urlquery escapers (go_template_format.h).
#include "templates/go_template_format.h"

#include "templates/go_template_strconv.h"

#include <string>

namespace specd::templates {

std::string html_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '\0': out += "\xEF\xBF\xBD"; break;
            default: out += c;
        }
    }
    return out;
}

std::string js_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '\\': out += "\\\\"; break;
                case '\'': out += "\\'"; break;
                case '"': out += "\\\""; break;
                case '<': out += "\\u003C"; break;
                case '>': out += "\\u003E"; break;
                case '&': out += "\\u0026"; break;
                case '=': out += "\\u003D"; break;
                default:
                    if (c < ' ') {
                        out += "\\u00";
                        out += k_hex_upper[c >> 4];
                        out += k_hex_upper[c & 0xF];
                    } else {
                        out += static_cast<char>(c);
                    }
            }
            ++i;
            continue;
        }
        uint32_t     cp;
        const size_t w = utf8_at(s, i, cp);
        if (w != 0 && is_printable(cp)) {
            out.append(s, i, w);
        } else {
            if (w == 0) cp = 0xFFFD;
            out += "\\u";
            for (int k = 3; k >= 0; --k) out += k_hex_upper[(cp >> (4 * k)) & 0xF];
        }
        i += w ? w : 1;
    }
    return out;
}

std::string query_escape(std::string_view s) {
    std::string out;
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            out += ch;
        } else if (c == ' ') {
            out += '+';
        } else {
            out += '%';
            out += k_hex_upper[c >> 4];
            out += k_hex_upper[c & 0xF];
        }
    }
    return out;
}

} // namespace specd::templates
