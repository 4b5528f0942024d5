#pragma once
// Rendering a parsed template, as text/template's exec does: dot, a stack of variables,
// pipelines feeding each command's result to the next as its last argument, Go's truth and
// range rules. Every limit in GoTemplateLimits that concerns a render is checked here.
#include "templates/go_template.h"
#include "templates/go_template_ast.h"
#include "templates/go_template_value.h"

#include <string>
#include <string_view>

namespace specd::templates {

// Appends the rendering to `out`. `source` is the template text, for positions in errors.
// Throws specd::Error(bad_request).
void execute(const ast::List & root, std::string_view source, const json & data, const GoTemplateLimits & limits,
             std::string & out);

} // namespace specd::templates
