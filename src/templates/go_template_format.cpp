// Go's fmt as templates reach it (go_template_format.h): how a value prints (%v), print,
// println, and printf's directives with their flags, width, precision and error forms.
#include "templates/go_template_format.h"

#include "core/utf8.h"
#include "templates/go_template_strconv.h"

#include <algorithm>
#include <cmath>

namespace specd::templates {

namespace {

// As Go prints a rune: an invalid one becomes U+FFFD.
void append_rune(std::string & out, uint32_t cp) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    append_utf8(out, cp);
}

size_t rune_count(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size();) {
        uint32_t     cp;
        const size_t w = utf8_at(s, i, cp);
        i += w ? w : 1;
        ++n;
    }
    return n;
}

// One printf directive's flags, width and precision.
struct Spec {
    bool plus = false, minus = false, sharp = false, space = false, zero = false;
    bool wid_present = false, prec_present = false;
    int  wid = 0, prec = 0;
};

void pad(std::string & out, std::string_view s, const Spec & f, bool zero_ok = true) {
    const size_t n = rune_count(s);
    if (!f.wid_present || n >= static_cast<size_t>(f.wid)) {
        out += s;
        return;
    }
    const size_t fill = static_cast<size_t>(f.wid) - n;
    if (f.minus) {
        out += s;
        out.append(fill, ' ');
    } else {
        out.append(fill, f.zero && zero_ok ? '0' : ' ');
        out += s;
    }
}

void bad_verb(std::string & out, char32_t verb, const Value & v);

std::string quote_rune(uint32_t cp) {
    std::string s;
    append_rune(s, cp);
    std::string q = go_quote(s);
    if (cp == '\'') return "'\\''";
    if (cp == '"') return "'\"'";
    return "'" + q.substr(1, q.size() - 2) + "'";
}

void fmt_integer(std::string & out, int64_t v, char32_t verb, const Spec & f) {
    int  base  = 10;
    bool upper = false;
    switch (verb) {
        case 'b': base = 2; break;
        case 'o': case 'O': base = 8; break;
        case 'x': base = 16; break;
        case 'X': base = 16; upper = true; break;
        default: break;
    }
    const bool neg = v < 0;
    uint64_t   u   = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    if (f.prec_present && f.prec == 0 && u == 0) {
        Spec plain  = f;
        plain.zero  = false;
        pad(out, "", plain);
        return;
    }
    // (Indexing the ternary directly, (upper ? a : b)[u % base], is miscompiled by g++ 12
    // with -fsanitize=undefined: it reports a division by zero.)
    const char *   hex = upper ? k_hex_upper : k_hex_lower;
    const uint64_t b   = static_cast<uint64_t>(base);
    std::string    digits;
    do {
        digits += hex[u % b];
        u /= b;
    } while (u != 0);
    std::reverse(digits.begin(), digits.end());
    int prec = 0;
    if (f.prec_present) {
        prec = f.prec;
    } else if (f.zero && !f.minus && f.wid_present) {
        prec = f.wid - ((neg || f.plus || f.space) ? 1 : 0);
    }
    if (static_cast<int>(digits.size()) < prec) digits.insert(0, static_cast<size_t>(prec) - digits.size(), '0');
    std::string s;
    if (neg) s += '-';
    else if (f.plus) s += '+';
    else if (f.space) s += ' ';
    if (f.sharp) {
        if (base == 2) s += "0b";
        else if (base == 8 && digits[0] != '0') s += '0';
        else if (base == 16) s += upper ? "0X" : "0x";
    }
    if (verb == 'O') s += "0o";
    s += digits;
    Spec plain = f;
    plain.zero = false;
    pad(out, s, plain);
}

void fmt_float(std::string & out, double v, char32_t verb, const Spec & f) {
    const char c    = verb == 'v' ? 'g' : static_cast<char>(verb);
    const int  prec = f.prec_present ? f.prec : (c == 'g' || c == 'G') ? -1 : 6;
    std::string num = format_float(v, c, prec);
    std::string sign;
    if (!num.empty() && (num[0] == '-' || num[0] == '+')) {
        sign = num.substr(0, 1);
        num.erase(0, 1);
    }
    if (sign != "-") sign = f.plus ? "+" : f.space ? " " : "";
    if (f.zero && !f.minus && f.wid_present && std::isfinite(v) &&
        static_cast<size_t>(f.wid) > sign.size() + num.size()) {
        out += sign;
        out.append(static_cast<size_t>(f.wid) - sign.size() - num.size(), '0');
        out += num;
        return;
    }
    Spec plain = f;
    plain.zero = false;
    pad(out, sign + num, plain);
}

void fmt_string(std::string & out, std::string_view s, char32_t verb, const Spec & f, const Value & v) {
    if (f.prec_present && (verb == 's' || verb == 'v' || verb == 'q')) {
        size_t i = 0;
        for (int n = 0; i < s.size() && n < f.prec; ++n) {
            uint32_t     cp;
            const size_t w = utf8_at(s, i, cp);
            i += w ? w : 1;
        }
        s = s.substr(0, i);
    }
    switch (verb) {
        case 'v':
            if (f.sharp) {
                pad(out, go_quote(s), f);
            } else {
                pad(out, s, f);
            }
            return;
        case 's': pad(out, s, f); return;
        case 'q': pad(out, go_quote(s), f); return;
        case 'x':
        case 'X': {
            const char * hex = verb == 'x' ? k_hex_lower : k_hex_upper;
            std::string h;
            const size_t n = f.prec_present ? std::min(s.size(), static_cast<size_t>(f.prec)) : s.size();
            for (size_t i = 0; i < n; ++i) {
                const auto b = static_cast<unsigned char>(s[i]);
                h += hex[b >> 4];
                h += hex[b & 0xF];
            }
            pad(out, h, f);
            return;
        }
        default: bad_verb(out, verb, v);
    }
}

void print_arg(std::string & out, const Value & v, char32_t verb, const Spec & f) {
    if (verb == 'T') {
        pad(out, v.type_name(), f);
        return;
    }
    switch (v.kind()) {
        case Value::Kind::nil:
            if (verb == 'v') pad(out, "<nil>", f);
            else bad_verb(out, verb, v);
            return;
        case Value::Kind::boolean:
            if (verb == 't' || verb == 'v') pad(out, v.as_bool() ? "true" : "false", f);
            else bad_verb(out, verb, v);
            return;
        case Value::Kind::integer:
            switch (verb) {
                case 'v': case 'd': case 'b': case 'o': case 'O': case 'x': case 'X':
                    fmt_integer(out, v.as_int(), verb == 'v' ? 'd' : verb, f);
                    return;
                case 'c': {
                    std::string s;
                    append_rune(s, static_cast<uint32_t>(std::clamp<int64_t>(v.as_int(), 0, 0x110000)));
                    pad(out, s, f);
                    return;
                }
                case 'q':
                    pad(out, quote_rune(static_cast<uint32_t>(std::clamp<int64_t>(v.as_int(), 0, 0x110000))), f);
                    return;
                case 'U': {
                    std::string h;
                    uint64_t    u = static_cast<uint64_t>(v.as_int());
                    do {
                        h += k_hex_upper[u % 16];
                        u /= 16;
                    } while (u != 0);
                    while (h.size() < 4) h += '0';
                    std::reverse(h.begin(), h.end());
                    pad(out, "U+" + h, f);
                    return;
                }
                default: bad_verb(out, verb, v); return;
            }
        case Value::Kind::floating:
            switch (verb) {
                case 'v': case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
                    fmt_float(out, v.as_float(), verb, f);
                    return;
                default: bad_verb(out, verb, v); return;
            }
        case Value::Kind::string:
            fmt_string(out, v.as_string(), verb, f, v);
            return;
        case Value::Kind::array:
        case Value::Kind::object: {
            std::string j;
            if (!append_json(j, v)) j.clear(); // what Ollama's String() gives when Marshal fails
            if (verb == 'v') verb = 's';
            fmt_string(out, j, verb, f, v);
            return;
        }
    }
}

void bad_verb(std::string & out, char32_t verb, const Value & v) {
    out += "%!";
    append_rune(out, verb);
    out += '(';
    if (v.is_nil()) {
        out += "<nil>";
    } else {
        out += v.type_name();
        out += '=';
        print_arg(out, v, 'v', Spec{});
    }
    out += ')';
}

// Go's parsenum: digits at s[i..], at most 1e6.
bool parse_num(std::string_view s, size_t & i, int & num) {
    bool any = false;
    num      = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        if (num > 1000000) {
            i = s.size(); // a crazy long number: Go gives up on the rest of the format
            return false;
        }
        num = num * 10 + (s[i] - '0');
        any = true;
        ++i;
    }
    return any;
}

bool too_large(int64_t x) { return x > 1000000 || x < -1000000; }

} // namespace

void append_value(std::string & out, const Value & v) { print_arg(out, v, 'v', Spec{}); }

std::string sprint(std::span<const Value> args) {
    std::string out;
    bool        prev_string = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const bool is_string = args[i].kind() == Value::Kind::string;
        if (i > 0 && !is_string && !prev_string) out += ' ';
        append_value(out, args[i]);
        prev_string = is_string;
    }
    return out;
}

std::string sprintln(std::span<const Value> args) {
    std::string out;
    for (size_t i = 0; i < args.size(); ++i) {
        if (i > 0) out += ' ';
        append_value(out, args[i]);
    }
    out += '\n';
    return out;
}

std::string sprintf(std::string_view format, std::span<const Value> args) {
    std::string out;
    size_t      arg = 0;
    size_t      i   = 0;
    const auto  end = format.size();
    while (i < end) {
        const size_t last = i;
        while (i < end && format[i] != '%') ++i;
        out.append(format, last, i - last);
        if (i >= end) break;
        ++i; // the %

        Spec f;
        for (; i < end; ++i) {
            const char c = format[i];
            if (c == '#') f.sharp = true;
            else if (c == '0') f.zero = !f.minus;
            else if (c == '+') f.plus = true;
            else if (c == '-') { f.minus = true; f.zero = false; }
            else if (c == ' ') f.space = true;
            else break;
        }
        if (i < end && format[i] == '[') {
            out += "%!(BADINDEX)";
            const size_t close = format.find(']', i);
            i = close == std::string_view::npos ? end : close + 1;
            continue;
        }
        // Width: digits or * (an int argument; negative means left-justify).
        if (i < end && format[i] == '*') {
            ++i;
            if (arg < args.size() && args[arg].kind() == Value::Kind::integer && !too_large(args[arg].as_int())) {
                int64_t w = args[arg].as_int();
                if (w < 0) {
                    f.minus = true;
                    f.zero  = false;
                    w       = -w;
                }
                f.wid         = static_cast<int>(w);
                f.wid_present = true;
            } else {
                out += "%!(BADWIDTH)";
            }
            ++arg;
        } else {
            f.wid_present = parse_num(format, i, f.wid);
        }
        // Precision.
        if (i < end && format[i] == '.') {
            ++i;
            if (i < end && format[i] == '*') {
                ++i;
                if (arg < args.size() && args[arg].kind() == Value::Kind::integer && !too_large(args[arg].as_int())) {
                    const int64_t p = args[arg].as_int();
                    f.prec          = p < 0 ? 0 : static_cast<int>(p);
                    f.prec_present  = p >= 0;
                } else {
                    out += "%!(BADPREC)";
                }
                ++arg;
            } else {
                f.prec_present = parse_num(format, i, f.prec);
                if (!f.prec_present) {
                    f.prec         = 0;
                    f.prec_present = true;
                }
            }
        }
        if (i >= end) {
            out += "%!(NOVERB)";
            break;
        }
        uint32_t     verb;
        const size_t w = utf8_at(format, i, verb);
        if (w == 0) verb = 0xFFFD;
        i += w ? w : 1;

        if (verb == '%') {
            out += '%';
            continue;
        }
        if (arg >= args.size()) {
            out += "%!";
            append_rune(out, verb);
            out += "(MISSING)";
            continue;
        }
        print_arg(out, args[arg], verb, f);
        ++arg;
    }
    if (arg < args.size()) {
        out += "%!(EXTRA ";
        for (size_t k = arg; k < args.size(); ++k) {
            if (k > arg) out += ", ";
            if (args[k].is_nil()) {
                out += "<nil>";
            } else {
                out += args[k].type_name();
                out += '=';
                append_value(out, args[k]);
            }
        }
        out += ')';
    }
    return out;
}

} // namespace specd::templates
