// Go's strconv and unicode/utf8 as the template formatters need them (go_template_strconv.h),
// and strconv.Quote (go_quote in go_template_format.h).
#include "templates/go_template_strconv.h"

#include "core/utf8.h"
#include "templates/go_template_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace specd::templates {

namespace {

// A float as Go's strconv sees it: the shortest digits that read back exactly, the value
// being 0.d * 10^dp. Zero has no digits.
struct Digits {
    std::string d;
    int         dp  = 0;
    bool        neg = false;
};

Digits shortest_digits(double v) {
    Digits out;
    out.neg = std::signbit(v);
    if (v == 0) return out;
    char       buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
    const std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
    const size_t           e = s.find('e');
    for (size_t k = 0; k < e; ++k) {
        if (s[k] != '.') out.d += s[k];
    }
    out.dp = std::atoi(std::string(s.substr(e + 1)).c_str()) + 1;
    return out;
}

// strconv's %e and %f from digits, `prec` digits after the point.
std::string fmt_e(const Digits & d, int prec, char e) {
    std::string out = d.neg ? "-" : "";
    out += d.d.empty() ? '0' : d.d[0];
    if (prec > 0) {
        out += '.';
        int i = 1;
        for (; i < static_cast<int>(d.d.size()) && i <= prec; ++i) out += d.d[i];
        for (; i <= prec; ++i) out += '0';
    }
    int exp = d.d.empty() ? 0 : d.dp - 1;
    out += e;
    out += exp < 0 ? '-' : '+';
    exp = std::abs(exp);
    if (exp < 10) out += '0';
    out += std::to_string(exp);
    return out;
}

std::string fmt_f(const Digits & d, int prec) {
    std::string out = d.neg ? "-" : "";
    const int   nd  = static_cast<int>(d.d.size());
    if (d.dp > 0) {
        const int m = std::min(nd, d.dp);
        out.append(d.d, 0, static_cast<size_t>(m));
        out.append(static_cast<size_t>(d.dp - m), '0');
    } else {
        out += '0';
    }
    if (prec > 0) {
        out += '.';
        for (int i = 0; i < prec; ++i) {
            const int j = d.dp + i;
            out += (j >= 0 && j < nd) ? d.d[static_cast<size_t>(j)] : '0';
        }
    }
    return out;
}

} // namespace

size_t utf8_at(std::string_view s, size_t i, uint32_t & cp) {
    const Utf8Char c = decode_utf8(s.substr(i));
    cp               = c.cp;
    return c.len;
}

bool is_printable(uint32_t cp) {
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) return false;
    return cp != 0xAD && cp != 0x2028 && cp != 0x2029 && cp != 0xFEFF;
}

std::string format_float(double v, char verb, int prec) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    const bool upper = verb == 'E' || verb == 'G';
    const char lower = static_cast<char>(upper ? verb + ('a' - 'A') : verb == 'F' ? 'f' : verb);
    if (prec < 0) {
        const Digits d  = shortest_digits(v);
        const int    nd = static_cast<int>(d.d.size());
        if (lower == 'e') return fmt_e(d, std::max(nd - 1, 0), upper ? 'E' : 'e');
        if (lower == 'f') return fmt_f(d, std::max(nd - d.dp, 0));
        const int exp = d.dp - 1;
        if (exp < -4 || exp >= 6) return fmt_e(d, nd - 1, upper ? 'E' : 'e');
        return fmt_f(d, std::max(nd - d.dp, 0));
    }
    char                    buf[1400];
    const std::chars_format f = lower == 'e' ? std::chars_format::scientific
                              : lower == 'f' ? std::chars_format::fixed
                                             : std::chars_format::general;
    if (lower == 'g' && prec == 0) prec = 1;
    const auto r = std::to_chars(buf, buf + sizeof buf, v, f, std::min(prec, 1000));
    if (r.ec != std::errc()) return "%!(BADPREC)";
    std::string out(buf, static_cast<size_t>(r.ptr - buf));
    if (upper) std::replace(out.begin(), out.end(), 'e', 'E');
    return out;
}

std::string go_quote(std::string_view s) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        uint32_t     cp;
        const size_t w = utf8_at(s, i, cp);
        if (w == 0) {
            const auto b = static_cast<unsigned char>(s[i]);
            out += "\\x";
            out += k_hex_lower[b >> 4];
            out += k_hex_lower[b & 0xF];
            ++i;
            continue;
        }
        if (cp == '"' || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (is_printable(cp)) {
            out.append(s, i, w);
        } else {
            switch (cp) {
                case '\a': out += "\\a"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\v': out += "\\v"; break;
                default:
                    if (cp < ' ' || cp == 0x7F) {
                        out += "\\x";
                        out += k_hex_lower[cp >> 4];
                        out += k_hex_lower[cp & 0xF];
                    } else {
                        const int n = cp < 0x10000 ? 4 : 8;
                        out += n == 4 ? "\\u" : "\\U";
                        for (int k = n - 1; k >= 0; --k) out += k_hex_lower[(cp >> (4 * k)) & 0xF];
                    }
            }
        }
        i += w;
    }
    out += '"';
    return out;
}

} // namespace specd::templates
