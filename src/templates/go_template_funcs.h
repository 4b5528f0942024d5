#pragma once
// The functions a template may call: Go's text/template builtins and the ones Ollama adds
// (json, currentDate, yesterdayDate, toTypeScriptType). A name outside this table is a parse
// error, as in Go.
#include "templates/go_template_value.h"

#include <optional>
#include <span>
#include <stdexcept>
#include <string_view>

namespace specd::templates {

enum class Builtin {
    and_, or_, not_,
    len, index, slice,
    eq, ne, lt, le, gt, ge,
    print, printf, println,
    html, js, urlquery,
    call,
    json, current_date, yesterday_date, to_typescript_type, // Ollama's
};

std::optional<Builtin> find_builtin(std::string_view name);
std::string_view       builtin_name(Builtin f);

// A call that cannot be made (wrong arguments, index out of range, ...); the renderer says
// where it happened.
class FuncError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Calls f on evaluated arguments. `and` and `or` are not called here: they evaluate their
// arguments lazily, so the renderer runs them itself.
Value call_builtin(Builtin f, std::span<const Value> args);

} // namespace specd::templates
