// Integer and number schemas: minimum, maximum and their exclusive forms, as exact integer
// bounds (numeric_range.h writes the grammar), and multipleOf where it can be written.
#include "grammar/schema_compiler_impl.h"

#include "grammar/numeric_range.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

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
    if (s.contains("multipleOf")) {
        if (auto expr = multiple_of(s, true, lo, hi, bounded, ptr); !expr.empty()) return expr;
    }
    if (!bounded) return integer_rule();
    const auto expr = integer_range_gbnf(lo, hi);
    if (expr.empty()) fail("no integer satisfies the bounds at " + where(ptr));
    return expr;
}

// multipleOf, written where a grammar of reasonable size can: a whole-number m over a bounded
// range of at most k_max_multiples values (each written out), a power of ten without bounds
// (the digits end in its zeros), and on numbers a power of ten below 1 without bounds (at
// most that many decimals). m = 1/n on integers constrains nothing. "" leaves the caller's
// rule as it is (after not_enforced where the keyword is dropped).
std::string Compiler::multiple_of(const json & s, bool integral, std::optional<int64_t> lo, std::optional<int64_t> hi,
                                  bool bounded, const std::string & ptr) {
    constexpr int64_t k_max_multiples = 1000;
    const double      m            = s["multipleOf"].get<double>();
    const bool        whole        = m >= 1 && m < k_bound_limit && std::floor(m) == m;
    const double      exponent     = std::round(std::log10(m)); // m = 10^exponent, if a power of ten
    const bool        power_of_ten = std::abs(m - std::pow(10.0, exponent)) <= 1e-12 * m;
    if (integral) {
        if (!whole && std::abs(1.0 / m - std::round(1.0 / m)) <= 1e-9 / m) return ""; // m = 1/n: every integer
        if (whole && bounded && lo && hi) {
            const auto step = static_cast<int64_t>(m);
            // The first multiple at or above lo (rounding up, also for negative lo).
            const int64_t first = (*lo / step + (*lo % step > 0 ? 1 : 0)) * step;
            if (first > *hi) fail("no multiple of " + s["multipleOf"].dump() + " satisfies the bounds at " + where(ptr));
            if ((*hi - first) / step < k_max_multiples) {
                std::vector<std::string> alts;
                for (int64_t v = first; v <= *hi; v += step) alts.push_back(gbnf_literal(std::to_string(v)));
                return gbnf_alt(alts);
            }
        }
        if (whole && !bounded && power_of_ten && exponent < k_max_int_digits) {
            const int zeros = static_cast<int>(exponent);
            return "(\"0\" | \"-\"? [1-9] [0-9]{0," + std::to_string(k_max_int_digits - 1 - zeros) + "} \"" +
                   std::string(size_t(zeros), '0') + "\")";
        }
        not_enforced("multipleOf", ptr, "written only over a bounded range of at most 1000 multiples, or as a power of ten without bounds");
        return "";
    }
    if (whole) return integer(s, ptr); // a number that is a multiple of a whole number is an integer
    if (!bounded && power_of_ten && exponent >= -15) {
        return "\"-\"? " + int_digits() + " (\".\" [0-9]{1," + std::to_string(int(-exponent)) + "})?";
    }
    not_enforced("multipleOf", ptr, "written on numbers only as a power of ten (0.1, 0.01, ...) without bounds");
    return "";
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
    if (s.contains("multipleOf")) {
        if (auto expr = multiple_of(s, false, std::nullopt, std::nullopt, bounded, ptr); !expr.empty()) return expr;
    }
    if (!bounded) return number_rule();
    const auto expr = number_range_gbnf(lo, hi);
    if (expr.empty()) fail("no number satisfies the bounds at " + where(ptr));
    return expr;
}

} // namespace specd::grammar::schema
