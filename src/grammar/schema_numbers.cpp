// Integer and number schemas: minimum, maximum and their exclusive forms, as exact integer
// bounds (numeric_range.h writes the grammar).
#include "grammar/schema_compiler_impl.h"

#include "grammar/numeric_range.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

namespace specd::grammar::schema {

namespace {

// Bounds beyond this are outside what the number grammars produce (see numeric_range.h).
constexpr double k_bound_limit = 1e18;

} // namespace

// An integer bound from a JSON number: `up` rounds toward the inside of the range.
// nullopt: the bound lies beyond every integer the grammar writes, so it binds nothing.
std::optional<int64_t> Compiler::int_bound(const json & v, bool lower, bool exclusive, const std::string & key,
                                           const std::string & ptr) {
    double d;
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
        const int64_t x = v.get<int64_t>();
        if (x > -k_bound_limit && x < k_bound_limit) return lower ? (exclusive ? x + 1 : x) : (exclusive ? x - 1 : x);
        d = static_cast<double>(x);
    } else {
        d = v.get<double>();
    }
    if (lower && d <= -k_bound_limit) return std::nullopt;
    if (!lower && d >= k_bound_limit) return std::nullopt;
    if (std::abs(d) >= k_bound_limit || !std::isfinite(d))
        fail("\"" + key + "\" " + v.dump() + " at " + where(ptr) + " is out of the supported range (magnitude below 1e18)");
    const auto x = static_cast<int64_t>(lower ? std::floor(d) : std::ceil(d));
    const bool integral = std::floor(d) == d;
    if (lower) return exclusive || !integral ? x + 1 : x;
    return exclusive || !integral ? x - 1 : x;
}

std::string Compiler::integer(const json & s, const std::string & ptr) {
    std::optional<int64_t> lo, hi;
    bool                   bounded = false;
    for (const auto & [key, lower, exclusive] : {std::tuple{"minimum", true, false}, {"exclusiveMinimum", true, true},
                                                 {"maximum", false, false}, {"exclusiveMaximum", false, true}}) {
        if (!s.contains(key)) continue;
        bounded = true;
        const auto b = int_bound(s[key], lower, exclusive, key, ptr);
        if (!b) continue;
        auto & side = lower ? lo : hi;
        side = !side ? *b : lower ? std::max(*side, *b) : std::min(*side, *b);
    }
    if (!bounded) return integer_rule();
    const auto expr = integer_range_gbnf(lo, hi);
    if (expr.empty()) fail("no integer satisfies the bounds at " + where(ptr));
    return expr;
}

std::string Compiler::number(const json & s, const std::string & ptr) {
    std::optional<NumberBound> lo, hi;
    bool                       bounded = false;
    for (const auto & [key, lower, exclusive] : {std::tuple{"minimum", true, false}, {"exclusiveMinimum", true, true},
                                                 {"maximum", false, false}, {"exclusiveMaximum", false, true}}) {
        if (!s.contains(key)) continue;
        bounded      = true;
        const auto & v = s[key];
        const double d = v.get<double>();
        if (!std::isfinite(d) || std::floor(d) != d)
            fail("non-integral bound \"" + std::string(key) + "\" " + v.dump() + " on a number at " + where(ptr) +
                 " is not supported (only integral bounds are enforced exactly)");
        if ((lower && d <= -k_bound_limit) || (!lower && d >= k_bound_limit)) continue;
        if (std::abs(d) >= k_bound_limit)
            fail("\"" + std::string(key) + "\" " + v.dump() + " at " + where(ptr) + " is out of the supported range (magnitude below 1e18)");
        const NumberBound b{v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d), exclusive};
        auto & side = lower ? lo : hi;
        // The tighter bound wins; at equal values the exclusive one.
        if (!side || (lower ? b.value > side->value : b.value < side->value) || (b.value == side->value && b.exclusive))
            side = b;
    }
    if (!bounded) return number_rule();
    const auto expr = number_range_gbnf(lo, hi);
    if (expr.empty()) fail("no number satisfies the bounds at " + where(ptr));
    return expr;
}

} // namespace specd::grammar::schema
