// String schemas: minLength / maxLength, pattern (regex_to_gbnf.h compiles it) and format
// (date, time, date-time, uuid).
#include "grammar/schema_compiler_impl.h"

#include "core/error.h"
#include "grammar/regex_to_gbnf.h"

#include <optional>
#include <string>

namespace specd::grammar::schema {

std::string Compiler::string(const json & s, const std::string & ptr) {
    const uint64_t                min = count(s, "minLength", 0);
    std::optional<uint64_t>       max;
    if (s.contains("maxLength")) max = count(s, "maxLength", 0);
    const std::string q = "\"\\\"\"";
    if (s.contains("pattern")) {
        if (s.contains("format")) not_enforced("format", ptr, "the pattern beside it is enforced instead");
        RegexGbnf r;
        try {
            r = regex_to_gbnf(s["pattern"].get<std::string>(), g_, hint(ptr) + "-pattern",
                              {lim_.max_pattern_length, lim_.max_pattern_depth, lim_.max_repeat});
        } catch (const Error & e) {
            fail("\"pattern\" at " + where(ptr) + ": " + e.what());
        }
        // Length bounds the pattern alone already implies are fine; others would need the
        // intersection of two languages.
        if (min > r.min_len || (max && (!r.max_len || *r.max_len > *max)))
            not_enforced(min > r.min_len ? "minLength" : "maxLength", ptr,
                         "beside a pattern only the pattern is enforced unless it implies the length (anchor it and bound its counts)");
        return gbnf_seq({q, r.expr, q});
    }
    if (s.contains("format")) {
        const auto format = s["format"].get<std::string>();
        const auto rule   = format_rule(format, ptr);
        if (!rule.empty()) {
            if (min > 0 || max) not_enforced(min > 0 ? "minLength" : "maxLength", ptr, "beside a format only the format is enforced");
            return gbnf_seq({q, rule, q});
        }
    }
    if (min == 0 && !max) return string_rule();
    return gbnf_seq({q, gbnf_repeat(g_, json_char_rule(g_), min, max), q});
}

std::string Compiler::format_rule(const std::string & format, const std::string & ptr) {
    const std::string date = R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))";
    const std::string time = R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";
    if (format == "date") return prim("date", date);
    if (format == "time") return prim("time", time);
    if (format == "date-time") return prim("date-time", prim("date", date) + " \"T\" " + prim("time", time));
    if (format == "uuid")
        return prim("uuid", R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})");
    // The common shapes, as the formats Pydantic and Zod emit mean them in practice (not
    // every corner of RFC 5321 / 3986): what a validator of the answer accepts.
    const std::string label = R"([a-zA-Z0-9] ([a-zA-Z0-9-]{0,61} [a-zA-Z0-9])?)";
    if (format == "hostname") return prim("hostname", label + R"( ("." )" + label + ")*");
    if (format == "email")
        return prim("email", R"([a-zA-Z0-9_+-]{1,64} ("." [a-zA-Z0-9_+-]{1,64})* "@" )" + label + R"( ("." )" + label + ")+");
    if (format == "ipv4") {
        const auto octet = prim("ipv4-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])");
        return prim("ipv4", octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet);
    }
    // A scheme, then characters a URI may hold (no space, quote, backslash, angle brackets or
    // control characters): what JSON carries without an escape.
    if (format == "uri" || format == "url")
        return prim("uri", R"g([a-zA-Z] [a-zA-Z0-9+.-]{0,31} ":" [a-zA-Z0-9._~:/?#@!$&'()*+,;=%\[\]-]+)g");
    // JSON Schema makes format an annotation unless a validator opts in: a format this
    // compiler does not know is any string.
    not_enforced("format", ptr, "the format " + json_quote(format) + " is unknown here (enforced: date, time, date-time, uuid, "
                                "email, hostname, ipv4, uri)");
    return "";
}

} // namespace specd::grammar::schema
