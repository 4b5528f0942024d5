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
        if (s.contains("format")) fail("\"format\" together with \"pattern\" at " + where(ptr) + " is not supported");
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
            fail("\"minLength\"/\"maxLength\" together with \"pattern\" at " + where(ptr) +
                 " are not supported unless the pattern alone implies them (anchor it and bound its counts)");
        return gbnf_seq({q, r.expr, q});
    }
    if (s.contains("format")) {
        const auto format = s["format"].get<std::string>();
        if (min > 0 || max)
            fail("\"minLength\"/\"maxLength\" together with \"format\" at " + where(ptr) + " are not supported");
        return gbnf_seq({q, format_rule(format, ptr), q});
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
    fail("unsupported string format " + json_quote(format) + " at " + where(ptr) + " (supported: date, time, date-time, uuid)");
}

} // namespace specd::grammar::schema
