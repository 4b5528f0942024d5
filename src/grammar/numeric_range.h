#pragma once
// Bounded JSON numbers as GBNF: exact digit-range grammars, so `minimum: 0` rules out a minus
// sign and `maximum: 10` rules out "11" before it is written, not after.
//
// Magnitudes are capped: an integer part has at most 16 digits unless a bound needs more
// (the cap is what keeps a model from writing digits forever). Bounds must lie within
// +-(10^18 - 1); the caller clamps or rejects others.
#include <cstdint>
#include <optional>
#include <string>

namespace specd::grammar {

// Digits in the integer part of a number when nothing bounds it.
inline constexpr int k_max_int_digits = 16;

// Integers in [lo, hi] (nullopt: open side), canonical: no leading zeros, no "-0".
// Returns "" when the range is empty.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

struct NumberBound {
    int64_t value;
    bool    exclusive;
};

// Numbers (integer part, optional fraction, no exponent) between integral bounds: the
// integer part ranges over the interior with any fraction, an inclusive upper endpoint takes
// only a zero fraction, an exclusive lower endpoint only a non-zero one. "" when empty.
std::string number_range_gbnf(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

} // namespace specd::grammar
