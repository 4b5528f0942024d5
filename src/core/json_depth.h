#pragma once
// How deeply JSON text nests, read without parsing it: checked before a parser (or code
// that recurses over the parsed document) ever sees hostile input.
#include <string_view>

namespace specd {

// Deepest nesting of arrays and objects outside string literals.
int json_nesting_depth(std::string_view text);

} // namespace specd
