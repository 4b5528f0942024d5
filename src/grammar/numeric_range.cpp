#include "grammar/numeric_range.h"

#include "grammar/gbnf.h"

#include <algorithm>
#include <string>
#include <vector>

namespace specd::grammar {

namespace {

int digits_of(uint64_t v) {
    int d = 1;
    while (v >= 10) v /= 10, ++d;
    return d;
}

uint64_t pow10(int d) {
    uint64_t p = 1;
    while (d-- > 0) p *= 10;
    return p;
}

// The largest magnitude an open side reaches: 16 digits, or as many as the other bound has.
uint64_t open_cap(std::optional<int64_t> other) {
    int d = k_max_int_digits;
    if (other) d = std::max(d, digits_of(static_cast<uint64_t>(*other < 0 ? -*other : *other)));
    return pow10(d) - 1;
}

std::string digit_class(char from, char to) {
    if (from == to) return gbnf_literal(std::string(1, from));
    return std::string("[") + from + "-" + to + "]";
}

std::string any_digits(size_t n) {
    if (n == 0) return "";
    return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

// All digit strings of one length between x and y (inclusive, x <= y). Alternatives split
// on the first digit that differs, so each string has exactly one derivation.
std::string same_length(const std::string & x, const std::string & y) {
    if (x == y) return gbnf_literal(x);
    size_t i = 0;
    while (x[i] == y[i]) ++i;
    const std::string prefix = i ? gbnf_literal(x.substr(0, i)) : "";
    const char        x0 = x[i], y0 = y[i];
    const std::string xr = x.substr(i + 1), yr = y.substr(i + 1);
    const size_t      k = xr.size();
    if (k == 0) return gbnf_seq({prefix, digit_class(x0, y0)});
    const bool x_low  = xr == std::string(k, '0');
    const bool y_high = yr == std::string(k, '9');
    std::vector<std::string> alts;
    if (!x_low) alts.push_back(gbnf_seq({gbnf_literal(std::string(1, x0)), same_length(xr, std::string(k, '9'))}));
    const char from = x_low ? x0 : x0 + 1, to = y_high ? y0 : y0 - 1;
    if (from <= to) alts.push_back(gbnf_seq({digit_class(from, to), any_digits(k)}));
    if (!y_high) alts.push_back(gbnf_seq({gbnf_literal(std::string(1, y0)), same_length(std::string(k, '0'), yr)}));
    return gbnf_seq({prefix, gbnf_alt(alts)});
}

// Canonical decimals of [a, b], 0 <= a <= b: one alternative per digit count.
std::string magnitudes(uint64_t a, uint64_t b) {
    std::vector<std::string> alts;
    for (int d = digits_of(a); d <= digits_of(b); ++d) {
        const uint64_t lo = d == digits_of(a) ? a : pow10(d - 1);
        const uint64_t hi = d == digits_of(b) ? b : pow10(d) - 1;
        alts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
    }
    return gbnf_alt(alts);
}

// Magnitudes x = m.f in an interval from P to Q (open or closed ends; Q a cap when open
// ended): the integer parts with the fractions each may take.
void magnitude_pieces(uint64_t p, bool p_open, uint64_t q, bool q_open, const std::string & sign,
                      std::vector<std::string> & out) {
    const std::string any_frac  = "(\".\" [0-9]{1," + std::to_string(k_max_int_digits) + "})?";
    const std::string zero_frac = "(\".\" \"0\"{1," + std::to_string(k_max_int_digits) + "})?";
    const std::string some_frac = "\".\" [0-9]{0," + std::to_string(k_max_int_digits - 1) + "} [1-9]";
    if (p > q || (p == q && (p_open || q_open))) return;
    uint64_t first = p;
    if (p_open) {
        out.push_back(gbnf_seq({sign, gbnf_literal(std::to_string(p)), some_frac}));
        ++first;
    }
    // Integer parts below Q take any fraction and stay below Q.
    if (q > first) out.push_back(gbnf_seq({sign, magnitudes(first, q - 1), any_frac}));
    if (!q_open && q >= first) out.push_back(gbnf_seq({sign, gbnf_literal(std::to_string(q)), zero_frac}));
}

uint64_t magnitude(int64_t v) { return static_cast<uint64_t>(v < 0 ? -v : v); }

} // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo_in, std::optional<int64_t> hi_in) {
    const int64_t lo = lo_in ? *lo_in : -static_cast<int64_t>(open_cap(hi_in));
    const int64_t hi = hi_in ? *hi_in : static_cast<int64_t>(open_cap(lo_in));
    if (lo > hi) return "";
    std::vector<std::string> alts;
    if (lo < 0) alts.push_back(gbnf_seq({"\"-\"", magnitudes(hi < 0 ? magnitude(hi) : 1, magnitude(lo))}));
    if (hi >= 0) alts.push_back(magnitudes(lo > 0 ? lo : 0, hi));
    return gbnf_alt(alts);
}

std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
    std::vector<std::string> alts;
    const uint64_t           cap_pos = open_cap(lo ? std::optional<int64_t>(lo->value) : std::nullopt) + 1;
    const uint64_t           cap_neg = open_cap(hi ? std::optional<int64_t>(hi->value) : std::nullopt) + 1;
    // Non-negative values: magnitude from max(lo, 0) to hi.
    if (!hi || hi->value >= 0) {
        const bool     from_lo = lo && lo->value >= 0;
        const uint64_t p       = from_lo ? lo->value : 0;
        const bool     p_open  = from_lo && lo->exclusive;
        if (hi) magnitude_pieces(p, p_open, hi->value, hi->exclusive, "", alts);
        else magnitude_pieces(p, p_open, cap_pos, true, "", alts);
    }
    // Negative values: magnitude above max(-hi, 0) (above 0 strictly) up to -lo.
    if (!lo || lo->value < 0) {
        const bool     from_hi = hi && hi->value < 0;
        const uint64_t p       = from_hi ? magnitude(hi->value) : 0;
        const bool     p_open  = from_hi ? hi->exclusive : true;
        if (lo) magnitude_pieces(p, p_open, magnitude(lo->value), lo->exclusive, "\"-\"", alts);
        else magnitude_pieces(p, p_open, cap_neg, true, "\"-\"", alts);
    }
    return gbnf_alt(alts);
}

} // namespace specd::grammar
