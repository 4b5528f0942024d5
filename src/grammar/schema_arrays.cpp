// Array schemas: tuple items (prefixItems, or draft 7's array-valued items), the items after
// them, minItems / maxItems.
#include "grammar/schema_compiler_impl.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace specd::grammar::schema {

std::string Compiler::array(const json & s, const std::string & ptr, int depth) {
    // Tuple items: prefixItems, or draft 7's array-valued items. Items after them: the
    // items schema (additionalItems in draft 7). Absent after a tuple: none, as for
    // additionalProperties; absent with no tuple: any value.
    const json   none = false;
    const json   any  = true;
    const json * prefix = nullptr;
    const json * extra  = &any;
    std::string  prefix_key = "prefixItems", extra_key = "items";
    if (s.contains("items") && s["items"].is_array()) {
        if (s.contains("prefixItems")) fail("\"items\" as an array and \"prefixItems\" together at " + where(ptr) + " are not supported");
        prefix     = &s["items"];
        prefix_key = "items";
        extra_key  = "additionalItems";
        extra      = s.contains("additionalItems") ? &s["additionalItems"] : &none;
    } else {
        if (s.contains("prefixItems")) prefix = &s["prefixItems"];
        extra = s.contains("items") ? &s["items"] : prefix ? &none : &any;
    }
    const bool extras = !(extra->is_boolean() && !extra->get<bool>());
    const size_t k = prefix ? prefix->size() : 0;
    const uint64_t lo = count(s, "minItems", 0);
    std::optional<uint64_t> hi;
    if (s.contains("maxItems")) hi = count(s, "maxItems", 0);
    if (!extras) hi = std::min<uint64_t>(hi.value_or(k), k);
    if (hi && lo > *hi)
        fail("\"minItems\" (" + std::to_string(lo) + ") at " + where(ptr) + " needs more items than the " +
             std::to_string(k) + " in \"" + prefix_key + "\" and no others are allowed");
    const size_t used = hi ? std::min<uint64_t>(k, *hi) : k;

    std::string tail; // items after the tuple
    if (extras && (!hi || *hi > k)) {
        const auto x   = visit(*extra, child(ptr, extra_key), depth + 1);
        const auto sep = g_.add(hint(ptr) + "-next", gbnf_seq({"\",\"", x}));
        const uint64_t t_lo = lo > k ? lo - k : 0;
        const std::optional<uint64_t> t_hi = hi ? std::optional<uint64_t>(*hi - k) : std::nullopt;
        if (k > 0) tail = gbnf_repeat(g_, sep, t_lo, t_hi);
        else {
            const auto rest = gbnf_repeat(g_, sep, t_lo > 0 ? t_lo - 1 : 0, t_hi ? std::optional<uint64_t>(*t_hi - 1) : std::nullopt);
            tail = t_lo > 0 ? gbnf_seq({x, rest}) : gbnf_alt({gbnf_seq({x, rest}), ""});
        }
    }
    // Tuple items from the last: each one past minItems is optional along with the rest.
    std::string acc = tail;
    for (size_t i = used; i-- > 0;) {
        const auto item = visit((*prefix)[i], child(child(ptr, prefix_key), std::to_string(i)), depth + 1);
        acc = gbnf_seq({i == 0 ? "" : "\",\"", item, acc});
        if (i >= lo) acc = g_.add(hint(ptr) + "-tail", acc) + "?";
    }
    return gbnf_seq({"\"[\"", acc, "\"]\""});
}

} // namespace specd::grammar::schema
