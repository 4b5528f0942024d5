#pragma once
// Go's fmt and encoding/json, as far as templates reach them: how a value prints, print /
// println / printf, strconv.Quote, JSON the way json.Marshal writes it, and the escapers
// behind html, js and urlquery. Implemented in go_template_format.cpp (fmt), go_template_json,
// go_template_strconv and go_template_escape.
//
// One deliberate difference from Go: an array or an object prints as JSON. In Go a plain
// map prints as `map[k:v]`, but every value Ollama hands a template whole (Tools, a tool's
// Function, a call's Arguments, parameter Properties) has a String() method that writes
// JSON, and that is what Ollama's templates rely on (`{{ .Function }}`, `{{ $.Tools }}`).
#include "templates/go_template_value.h"

#include <span>
#include <string>
#include <string_view>

namespace specd::templates {

// fmt's %v: nil is "<nil>", floats in Go's shortest %g form (1e+06, 0.5, 3), arrays and
// objects as JSON.
void append_value(std::string & out, const Value & v);

// json.Marshal: HTML-safe escaping (<, >, & as \u003c ...), object members in the data's
// order (callers order them as Go would: struct fields as declared, map keys sorted), floats
// as Go writes them. False, with `out` unspecified, where Go's Marshal fails (NaN or
// infinite numbers) or the value nests deeper than max_depth.
bool append_json(std::string & out, const Value & v, int max_depth = 512);

// fmt.Sprint, fmt.Sprintln, fmt.Sprintf. Sprintf supports the flags + - # 0 and space, width
// and precision (digits or *), and the verbs v s d q t f F e E g G x X o O b c U %; a verb
// that does not fit its argument, a missing or an extra argument print as Go prints them
// (%!d(string=x), %!s(MISSING), %!(EXTRA int=1)). Argument indexes (%[1]d) are refused the
// same way (%!(BADINDEX)).
std::string sprint(std::span<const Value> args);
std::string sprintln(std::span<const Value> args);
std::string sprintf(std::string_view format, std::span<const Value> args);

// strconv.Quote, with printable Unicode approximated (every valid code point outside the C0
// and C1 controls, U+00AD, U+2028/9 and U+FEFF is kept as is).
std::string go_quote(std::string_view s);

// text/template's html, js and urlquery escapers.
std::string html_escape(std::string_view s);
std::string js_escape(std::string_view s);
std::string query_escape(std::string_view s);

} // namespace specd::templates
