#pragma once
// What Go's strconv and unicode/utf8 do for the template formatters (go_template_format.h),
// shared by their files and nobody else: decoding one UTF-8 sequence as Go does, strconv's
// printable test and FormatFloat. strconv.Quote is go_quote (go_template_format.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specd::templates {

inline constexpr const char * k_hex_lower = "0123456789abcdef";
inline constexpr const char * k_hex_upper = "0123456789ABCDEF";

// Length of the valid UTF-8 sequence at s[i] and its code point; 0 when the byte there does
// not start one (Go then sees utf8.RuneError of width 1).
size_t utf8_at(std::string_view s, size_t i, uint32_t & cp);

bool is_printable(uint32_t cp);

// A float the way Go's strconv.FormatFloat(v, verb, prec, 64) writes it. prec -1 is the
// shortest form that reads back exactly; %g (and so %v) then switches to the exponent form
// below 1e-4 and from 1e+06 on, as Go does. Explicit precisions are capped at 1000 digits.
std::string format_float(double v, char verb, int prec);

} // namespace specd::templates
