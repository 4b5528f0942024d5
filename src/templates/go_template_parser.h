#pragma once
// Go template text -> tree, following text/template/parse: the same grammar, the same
// scoping of variables (a variable lives to the {{end}} of the control structure that
// declares it), functions resolved by name at parse time. {{define}}, {{template}} and
// {{block}} are refused by name. Recursion is bounded: control structures and parentheses
// together nest at most max_nesting_depth deep; at most max_variables are in scope at once.
#include "templates/go_template.h"
#include "templates/go_template_ast.h"

#include <string>
#include <string_view>
#include <vector>

namespace specd::templates {

// Throws specd::Error(bad_request): "invalid template: line L, column C: what is wrong".
ast::List parse_template(std::string_view source, const GoTemplateLimits & limits);

// The identifiers the tree mentions in fields and variables, lower-cased, sorted, unique:
// Ollama's Template.Vars(), which decides whether a template is rendered with .Messages.
std::vector<std::string> template_vars(const ast::List & root);

} // namespace specd::templates
